//! Which database a workspace's queue lives in: its SQLite file unless it asks for
//! PostgreSQL, by `HOOKQ_DATABASE_URL` in the environment or `[queue] database` in its
//! `config.toml` (the environment wins), and then which queue there: `[queue] name`, or one
//! derived from the repository's remote URL, the same on every host that clones it.

use std::path::Path;

use crate::queue::config::Config;
use crate::queue::config::parse::near;
use crate::queue::driver::Place;
use crate::queue::error::Error;
use crate::queue::pg::name::QueueName;
use crate::queue::pg::target::{Target, mask};
use crate::queue::workspace::Workspace;

/// The environment variable that names the queue's PostgreSQL database, winning over
/// `[queue] database`.
pub use crate::queue::options::DATABASE_ENV;

/// Where a workspace's choice of PostgreSQL came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChosenBy {
    /// `HOOKQ_DATABASE_URL`.
    Environment,
    /// `[queue] database` in `config.toml`.
    Config,
}

/// The PostgreSQL queue a workspace asks for.
#[derive(Debug, Clone)]
pub struct PgChoice {
    /// Where to connect (shown masked).
    pub target: Target,
    /// The queue in that database.
    pub queue: QueueName,
    /// Which setting asked for it.
    pub by: ChosenBy,
}

impl PgChoice {
    /// Where the chosen queue lives, as its errors name it.
    pub fn place(&self) -> Place {
        Place::postgres(&self.queue, &self.target)
    }
}

/// What `config.toml` says of the database, read leniently: a config that hookq refuses for
/// another key still tells where its queue lives, so that recording goes on there.
#[derive(Debug, Default)]
struct Asked {
    database: Option<String>,
    name: Option<String>,
    remote: Option<String>,
}

/// The PostgreSQL queue `ws` asks for, `None` for its SQLite file. `env` is the value of
/// [`DATABASE_ENV`] (an empty one counts as unset). A config that is missing or cannot be read
/// asks for nothing; one whose TOML cannot be parsed is an error only when a line of it sets
/// `database`: otherwise the workspace is on SQLite, whose commands record with an invalid
/// config as before.
pub fn choose(ws: &Workspace, env: Option<&str>) -> Result<Option<PgChoice>, Error> {
    let path = ws.config_path();
    let asked = asked(&path)?;
    let env = env.map(str::trim).filter(|v| !v.is_empty());
    let (text, by) = match (env, &asked.database) {
        (Some(url), _) => (url.to_owned(), ChosenBy::Environment),
        (None, Some(url)) => (url.clone(), ChosenBy::Config),
        (None, None) => return Ok(None),
    };
    let name = match &asked.name {
        Some(n) => n.clone(),
        None => default_name(ws.root(), asked.remote.as_deref().unwrap_or("origin")),
    };
    // The connection string may not parse: the place names it masked as given.
    let placed = |source| Error::Postgres {
        place: Box::new(Place::Postgres {
            queue: name.clone(),
            target_masked: mask(&text),
        }),
        source,
    };
    let target = Target::parse(&text).map_err(placed)?;
    let queue = QueueName::new(name.clone()).map_err(placed)?;
    Ok(Some(PgChoice { target, queue, by }))
}

/// The connection string `[queue] database` of the config at `path` sets, read as leniently
/// as [`choose`] reads it; `None` when it sets none or cannot be read.
pub fn configured_database(path: &Path) -> Option<String> {
    asked(path).ok()?.database
}

fn asked(path: &Path) -> Result<Asked, Error> {
    // A config that cannot be read asks for nothing: recording into the SQLite file goes on
    // without it, as it always has; the drain reports the file when it needs it.
    let Ok(bytes) = std::fs::read(path) else {
        return Ok(Asked::default());
    };
    let refused = match Config::parse(path, &bytes) {
        Ok(cfg) => {
            return Ok(Asked {
                database: cfg.queue.database,
                name: cfg.queue.name,
                remote: Some(cfg.repository.remote),
            });
        }
        Err(e) => e,
    };
    let text = String::from_utf8_lossy(&bytes);
    let Ok(doc) = toml::from_str::<toml::Table>(&text) else {
        let sets_database = text.lines().any(|l| {
            l.split_once('=')
                .is_some_and(|(key, _)| near(key.trim().trim_matches(['"', '\'']), "database"))
        });
        return if sets_database {
            Err(refused.into())
        } else {
            Ok(Asked::default())
        };
    };
    if misnames_database(&doc) {
        return Err(refused.into());
    }
    let get = |table: &str, key: &str| {
        doc.get(table)
            .and_then(|t| t.get(key))
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    Ok(Asked {
        database: get("queue", "database"),
        name: get("queue", "name"),
        remote: get("repository", "remote"),
    })
}

/// Whether `doc` names the database with a key or table a typo away from `[queue] database`
/// (`databse`, `[queu]`): read as absent, the queue would move to the SQLite file without a
/// word, where no other host drains it.
fn misnames_database(doc: &toml::Table) -> bool {
    doc.iter()
        .filter(|(table, _)| near(table, "queue"))
        .filter_map(|(table, value)| Some((table, value.as_table()?)))
        .any(|(table, keys)| {
            keys.keys()
                .any(|k| near(k, "database") && (k != "database" || table != "queue"))
        })
}

/// The queue's name when `[queue] name` is unset: the path of `remote`'s URL without its host
/// and `.git` (`git@github.com:acme/widgets.git` and `https://github.com/acme/widgets` both give
/// `acme/widgets`), its last two parts at most; without that remote, the name of the
/// workspace's folder. Characters a queue name cannot hold become `-`.
pub fn default_name(root: &Path, remote: &str) -> String {
    let url = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["config", "--get", &format!("remote.{remote}.url")])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty());
    let name = match url {
        Some(url) => name_of_url(&url),
        None => root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    let name = sanitize(&name);
    if name.is_empty() {
        "default".into()
    } else {
        name
    }
}

/// The repository path of a remote URL, its last two parts at most.
fn name_of_url(url: &str) -> String {
    let path = match url.split_once("://") {
        // scheme://[user@]host[:port]/path
        Some((_, rest)) => rest.split_once('/').map_or("", |(_, p)| p),
        // user@host:path (scp-like), or a local path
        None => match url.split_once(':') {
            Some((host, p)) if !host.contains('/') => p,
            _ => url,
        },
    };
    let path = path.trim_end_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != "~")
        .collect();
    parts[parts.len().saturating_sub(2)..].join("/")
}

fn sanitize(name: &str) -> String {
    let kept: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-/:@+".contains(c) {
                c
            } else {
                '-'
            }
        })
        .take(200)
        .collect();
    kept.trim_start_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_url_names_its_repository_whatever_its_form() {
        for (url, name) in [
            ("git@github.com:acme/widgets.git", "acme/widgets"),
            ("https://github.com/acme/widgets", "acme/widgets"),
            ("https://github.com/acme/widgets.git/", "acme/widgets"),
            ("ssh://git@host:2222/srv/git/acme/widgets.git", "acme/widgets"),
            ("/srv/git/widgets.git", "git/widgets"),
            ("file:///srv/widgets", "srv/widgets"),
        ] {
            assert_eq!(name_of_url(url), name, "{url}");
        }
        assert_eq!(sanitize("my repo (2)"), "my-repo--2-");
        assert_eq!(sanitize("..x"), "x");
    }

    #[test]
    fn the_environment_wins_and_sqlite_stays_the_default() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::at(dir.path().join("widgets"));
        std::fs::create_dir_all(ws.state_dir()).unwrap();
        assert!(choose(&ws, None).unwrap().is_none());
        std::fs::write(ws.config_path(), "[hooks]\nafter_fail = ['true']\n").unwrap();
        assert!(choose(&ws, Some("")).unwrap().is_none());
        let c = choose(&ws, Some("postgres://u:secret@db.example/hq")).unwrap().unwrap();
        assert_eq!(c.by, ChosenBy::Environment);
        assert_eq!(c.queue.as_str(), "widgets");
        assert!(!c.target.to_string().contains("secret"));

        std::fs::write(
            ws.config_path(),
            "[queue]\ndatabase = 'postgres://u@cfg.example/hq'\nname = 'acme/w'\n",
        )
        .unwrap();
        let c = choose(&ws, None).unwrap().unwrap();
        assert_eq!((c.by, c.queue.as_str()), (ChosenBy::Config, "acme/w"));
        assert_eq!(
            configured_database(&ws.config_path()).as_deref(),
            Some("postgres://u@cfg.example/hq")
        );
        let c = choose(&ws, Some("postgres://u@env.example/hq")).unwrap().unwrap();
        assert_eq!(c.by, ChosenBy::Environment);
        assert!(c.target.to_string().contains("env.example"));

        // Refused for another key, the config still says where the queue is.
        std::fs::write(
            ws.config_path(),
            "[queue]\ndatabase = 'postgres://u@cfg.example/hq'\n[hooks]\nafter_mrge = []\n",
        )
        .unwrap();
        assert!(choose(&ws, None).unwrap().is_some());
        // Unreadable TOML: an error when it sets a database, SQLite when it does not.
        std::fs::write(ws.config_path(), "[queue\ndatabase = 'x'\n").unwrap();
        assert!(matches!(choose(&ws, None), Err(Error::Config(_))));
        std::fs::write(ws.config_path(), "[hooks\n").unwrap();
        assert!(choose(&ws, None).unwrap().is_none());
        // A database key or table a typo away is an error, not the SQLite file.
        for text in [
            "[queue]\ndatabse = 'postgres://u@cfg.example/hq'\n",
            "[queue]\nDatabase = 'postgres://u@cfg.example/hq'\n",
            "[queu]\ndatabase = 'postgres://u@cfg.example/hq'\n",
            "[Queue]\ndatabse = 'postgres://u@cfg.example/hq'\n",
            "[queue]\ndatabase = 'postgres://u@cfg.example/hq'\ndatabse = 'x'\n",
            "[queue\ndatabse = 'x'\n",
        ] {
            std::fs::write(ws.config_path(), text).unwrap();
            let err = choose(&ws, None).unwrap_err().to_string();
            assert!(err.contains("did you mean") || text.starts_with("[queue\n"), "{text}: {err}");
        }
        // A typo elsewhere in a config without a database leaves it on SQLite.
        std::fs::write(ws.config_path(), "[queue]\nnam = 'x'\n").unwrap();
        assert!(choose(&ws, None).unwrap().is_none());
        // A bad queue name is refused, naming it.
        std::fs::write(
            ws.config_path(),
            "[queue]\ndatabase = 'postgres://u@cfg.example/hq'\nname = '-x'\n",
        )
        .unwrap();
        let err = choose(&ws, None).unwrap_err();
        assert!(err.to_string().contains("invalid queue name"), "{err}");
    }
}
