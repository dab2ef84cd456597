//! `hookq init`: the state dir, the database and a config that is never overwritten.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::cli::error::Error;
use hookq::queue::config::initial_config;
use hookq::queue::store::Store;
use hookq::queue::workspace::Workspace;

#[cfg(feature = "postgres")]
use hookq::queue::pg;

use super::app::Ctx;

/// Create the state dir, database and config.toml in DIR (default: the current directory).
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The remote the default `after_merge` lines delete the task's branch from.
    #[arg(long, value_name = "NAME", default_value = "origin")]
    remote: String,
    /// The repository's main branch (`repository.main_branch`).
    #[arg(long, value_name = "NAME", default_value = "main")]
    main_branch: String,
    /// Keep the queue in this PostgreSQL database (`[queue] database` in the config written)
    /// instead of the workspace's SQLite file. A config holding a password is written readable
    /// by its owner only: prefer to give the password in `HOOKQ_DATABASE_URL`.
    #[cfg(feature = "postgres")]
    #[arg(long, value_name = "URL")]
    database: Option<String>,
}

/// A remote name safe to write into a shell line: `[A-Za-z0-9][A-Za-z0-9._-]*`.
fn check_remote(name: &str) -> Result<(), Error> {
    let ok = name.len() <= 100
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "invalid remote name {name:?}: use ASCII letters, digits, `.`, `_` and `-`"
        )))
    }
}

/// A branch name: like a remote name, with `/` between parts.
fn check_branch(name: &str) -> Result<(), Error> {
    let ok = name.len() <= 200
        && name
            .split('/')
            .all(|part| check_remote(part).is_ok() && !part.ends_with(".lock"))
        && !name.contains("..");
    if ok {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "invalid branch name {name:?}: use ASCII letters, digits, `.`, `_`, `-` and `/`"
        )))
    }
}

pub(super) fn run(ctx: &Ctx, args: Args) -> Result<(), Error> {
    check_remote(&args.remote)?;
    check_branch(&args.main_branch)?;
    // The directory itself, symlinks and `..` resolved, as every other command finds it.
    let root = std::fs::canonicalize(ctx.start())
        .ok()
        .filter(|r| r.is_dir())
        .ok_or_else(|| Error::NotFound(format!("no directory {}", ctx.start().display())))?;
    let ws = Workspace::at(root);
    // Where the queue goes is settled, and a PostgreSQL queue set up, before anything is made
    // here: a URL that cannot be read or reached leaves no workspace behind.
    #[cfg(feature = "postgres")]
    let database = match postgres_queue(ctx, &ws, &args)? {
        Some(choice) => Some((set_up(&choice)?, choice)),
        None => None,
    };
    let mut made = Made::default();
    made.dirs(ws.state_dir())
        .map_err(io("cannot create", ws.state_dir()))?;
    let config = ws.config_path();
    #[cfg_attr(not(feature = "postgres"), allow(unused_mut))]
    let mut text = initial_config(&args.remote, &args.main_branch);
    #[cfg(feature = "postgres")]
    if let Some(url) = &args.database {
        text = text.replacen(
            "[queue]\n",
            &format!(
                "[queue]\ndatabase = {}\n",
                hookq::queue::config::toml_quote(url)
            ),
            1,
        );
    }
    #[cfg(feature = "postgres")]
    let secret = args
        .database
        .as_deref()
        .is_some_and(hookq::queue::pg::has_password);
    #[cfg(not(feature = "postgres"))]
    let secret = false;
    // A config holding a password is its owner's alone from the moment it exists.
    let mode = if secret { 0o600 } else { 0o666 };
    let wrote = write_new(&config, text.as_bytes(), mode).map_err(io("cannot write", &config))?;
    if wrote {
        made.file(config.clone());
    }
    #[cfg(feature = "postgres")]
    if let Some((schema, choice)) = database {
        create_lock_file(&ws, &mut made)?;
        made.keep();
        outln!("hookq workspace: {}", ws.root().display());
        if wrote {
            outln!("wrote {}", config.display());
        } else if args.database.is_some() {
            outln!(
                "kept {} (it exists; init never overwrites it): --database was not written; set [queue] database there",
                config.display()
            );
        } else {
            outln!(
                "kept {} (it exists; init never overwrites it)",
                config.display()
            );
        }
        let from = match (&args.database, choice.by) {
            (Some(_), _) => "--database",
            (None, hookq::queue::pg::ChosenBy::Environment) => hookq::queue::pg::DATABASE_ENV,
            (None, hookq::queue::pg::ChosenBy::Config) => "config.toml",
        };
        outln!(
            "queue database {} (from {from}): queue {}, schema version {schema}; no SQLite file",
            choice.target,
            choice.queue
        );
        git_notes(&ws, &args.remote);
        password_notes(&ws, wrote && secret);
        return Ok(());
    }
    let db = ws.db_path();
    made.sqlite(&db);
    Store::open_with(&db, ctx.options()?.store).map_err(|e| Error::store(&db, e))?;
    create_lock_file(&ws, &mut made)?;
    made.keep();
    outln!("hookq workspace: {}", ws.root().display());
    if wrote {
        outln!("wrote {}", config.display());
    } else {
        outln!(
            "kept {} (it exists; init never overwrites it)",
            config.display()
        );
    }
    outln!("database {}", db.display());
    git_notes(&ws, &args.remote);
    #[cfg(feature = "postgres")]
    password_notes(&ws, false);
    Ok(())
}

/// An I/O failure on `path`.
fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.to_path_buf();
    move |source| Error::Io { what, path, source }
}

/// The PostgreSQL queue `init` sets up: the one `--database` names, else the one the workspace
/// asks for already (`HOOKQ_DATABASE_URL`, or the database of a config it keeps); `None` for
/// the SQLite file. A config yet to be written names its queue after `--remote`.
#[cfg(feature = "postgres")]
fn postgres_queue(
    ctx: &Ctx,
    ws: &Workspace,
    args: &Args,
) -> Result<Option<hookq::queue::pg::PgChoice>, Error> {
    use hookq::queue::pg;
    let choice = match &args.database {
        Some(url) => pg::choose(ws, Some(url))?,
        None => ctx.choice(ws)?,
    };
    let Some(mut choice) = choice else {
        return Ok(None);
    };
    if ws.config_path().symlink_metadata().is_err() {
        let name = pg::choose::default_name(ws.root(), &args.remote);
        choice.queue = pg::QueueName::new(name).map_err(|source| {
            Error::Queue(hookq::queue::Error::Postgres {
                place: Box::new(choice.place()),
                source,
            })
        })?;
    }
    Ok(Some(choice))
}

/// What a run of `init` made, undone unless it succeeds: a failed `init` leaves nothing of its
/// own behind (a half-made state dir would have the next `task add` start an SQLite queue
/// there), and never touches what was there before it.
#[derive(Default)]
struct Made {
    /// Made in this order; removed in the reverse one.
    paths: Vec<(PathBuf, bool)>,
    kept: bool,
}

impl Made {
    /// Creates `dir` and the missing folders above it (mode 0700), noting each it made.
    fn dirs(&mut self, dir: &Path) -> std::io::Result<()> {
        let missing: Vec<PathBuf> = dir
            .ancestors()
            .take_while(|d| d.symlink_metadata().is_err())
            .map(Path::to_path_buf)
            .collect();
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        self.paths
            .extend(missing.into_iter().rev().map(|d| (d, true)));
        Ok(())
    }

    /// Notes a file this run made.
    fn file(&mut self, path: PathBuf) {
        self.paths.push((path, false));
    }

    /// Notes the SQLite database at `db` and the files beside it that SQLite makes, those
    /// that are not there yet.
    fn sqlite(&mut self, db: &Path) {
        for suffix in ["", "-journal", "-wal", "-shm"] {
            let mut name = db.as_os_str().to_owned();
            name.push(suffix);
            let path = PathBuf::from(name);
            if path.symlink_metadata().is_err() {
                self.file(path);
            }
        }
    }

    /// `init` succeeded: everything made stays.
    fn keep(&mut self) {
        self.kept = true;
    }
}

impl Drop for Made {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        for (path, dir) in self.paths.iter().rev() {
            // A folder is removed only when empty: what another process put there stays.
            let _ = if *dir {
                std::fs::remove_dir(path)
            } else {
                std::fs::remove_file(path)
            };
        }
    }
}

/// The workspace's `runner.lock`, noted in `made` when this run creates it.
fn create_lock_file(ws: &Workspace, made: &mut Made) -> Result<(), Error> {
    let lock = ws.lock_path();
    if lock.symlink_metadata().is_err() {
        made.file(lock.clone());
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock)
        .map_err(|source| Error::Io {
            what: "cannot create",
            path: lock.clone(),
            source,
        })?;
    Ok(())
}

/// What `init` says, in one `warning:` line on stderr, of a password in `config.toml`: that it
/// wrote one (`written`), readable by its owner only, and whether git ignores the file; or that
/// the config it kept holds one that others may read. Never the password itself.
#[cfg(feature = "postgres")]
fn password_notes(ws: &Workspace, written: bool) {
    if !written {
        if let Some(w) = super::check::exposed_password(ws) {
            errln!("warning: {w}");
        }
        return;
    }
    let path = ws.config_path();
    let path_arg = path.to_string_lossy();
    // Exit 0: ignored and untracked, so `git add -A` leaves it out.
    let ignored =
        git(ws, &["check-ignore", "--quiet", &path_arg]).is_ok_and(|o| o.status.success());
    errln!(
        "warning: {} holds the database password: it is readable by you only (mode 0600){}; {} keeps the password out of the file",
        path.display(),
        if ignored { " and git ignores it" } else { "" },
        hookq::queue::pg::DATABASE_ENV
    );
}

/// Runs `git -C <workspace root> ARGS`, its stderr discarded.
fn git(ws: &Workspace, args: &[&str]) -> std::io::Result<std::process::Output> {
    std::process::Command::new("git")
        .arg("-C")
        .arg(ws.root())
        .args(args)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
}

/// What `init` says about the git repository around the workspace: it keeps the state dir out
/// of `git status` (through `.git/info/exclude`, which is the clone's own, never a tracked
/// `.gitignore`), and says what the default `after_merge` lines will not find. Problems here
/// are notes, not failures: the workspace is usable without git.
fn git_notes(ws: &Workspace, remote: &str) {
    let git = |args: &[&str]| git(ws, args);
    let top = match git(&["rev-parse", "--show-toplevel"]) {
        Ok(out) if out.status.success() => {
            PathBuf::from(String::from_utf8_lossy(&out.stdout).trim_end_matches('\n'))
        }
        Ok(_) => {
            outln!(
                "note: {} is not in a git repository: the default after_merge lines need one (they delete the task's branch and worktree with git)",
                ws.root().display()
            );
            return;
        }
        Err(e) => {
            outln!(
                "note: cannot run git ({e}): the default after_merge lines need git and a repository"
            );
            return;
        }
    };
    match exclude_state_dir(ws, &top, &git) {
        Ok(Some((pattern, file))) => outln!(
            "added {pattern} to {} (git ignores the state dir)",
            file.display()
        ),
        Ok(None) => {}
        Err(e) => outln!("note: the state dir is not kept out of git status: {e}"),
    }
    // `git remote get-url` exits 2 for a remote that is not configured.
    if git(&["remote", "get-url", remote]).is_ok_and(|o| o.status.code() == Some(2)) {
        outln!(
            "note: this repository has no remote {remote}: the first after_merge line skips the remote branch until it has one (or init --remote NAME names another)"
        );
    }
}

/// Appends the state dir to the repository's `info/exclude` unless git ignores it already.
/// The pattern and the file it went into, when it added one.
fn exclude_state_dir(
    ws: &Workspace,
    top: &Path,
    git: &dyn Fn(&[&str]) -> std::io::Result<std::process::Output>,
) -> Result<Option<(String, PathBuf)>, String> {
    let state = ws.state_dir();
    let state_arg = state.to_string_lossy();
    if git(&["check-ignore", "--quiet", "--no-index", &state_arg]).is_ok_and(|o| o.status.success())
    {
        return Ok(None);
    }
    let top = std::fs::canonicalize(top).map_err(|e| format!("{}: {e}", top.display()))?;
    let rel = state
        .strip_prefix(&top)
        .map_err(|_| format!("{} is not under {}", state.display(), top.display()))?;
    let pattern = format!("/{}/", rel.to_string_lossy());
    // In a linked worktree this is the main repository's file, which git reads for every
    // worktree.
    let out = git(&["rev-parse", "--git-path", "info/exclude"]).map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err("git rev-parse --git-path info/exclude failed".into());
    }
    let file = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim_end_matches('\n'));
    let file = if file.is_absolute() {
        file
    } else {
        ws.root().join(file)
    };
    // `../.git/info/exclude` from a subfolder: named plainly in what init prints.
    let file = match (file.parent().map(std::fs::canonicalize), file.file_name()) {
        (Some(Ok(dir)), Some(name)) => dir.join(name),
        _ => file,
    };
    let old = match std::fs::read(&file) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
    };
    let mut add = String::new();
    if !old.is_empty() && !old.ends_with(b"\n") {
        add.push('\n');
    }
    add.push_str(&pattern);
    add.push('\n');
    let write = || -> std::io::Result<()> {
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&file)?
            .write_all(add.as_bytes())
    };
    write().map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    Ok(Some((pattern, file)))
}

/// Writes `bytes` to `path` unless it exists, whole or not at all: into a file of its own
/// beside it first, created with `mode` (less the umask), synced, then linked into place, which
/// fails if `path` appeared meanwhile.
/// Whether it wrote. (Written in place, a full disk or a file-size limit left a short or empty
/// `config.toml`, which the next `init` kept and which cleared every point without running it.)
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<bool> {
    if path.symlink_metadata().is_ok() {
        return Ok(false);
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.new-{}", std::process::id()));
    let linked = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        })
        .and_then(|()| match std::fs::hard_link(&tmp, path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e),
        });
    let _ = std::fs::remove_file(&tmp);
    if linked? {
        // The new name is durable once its folder is.
        std::fs::File::open(path.parent().unwrap_or(Path::new(".")))?.sync_all()?;
        return Ok(true);
    }
    Ok(false)
}

#[cfg(feature = "postgres")]
/// Connects and opens the queue, creating or upgrading the schema.
fn open_database(choice: &pg::PgChoice) -> Result<pg::PgStore, Error> {
    let at = |e| super::check::placed(choice, e);
    let mut store = pg::PgStore::open(&choice.target, choice.queue.clone()).map_err(at)?;
    // A command someone waits for gets the timeouts a runner's connection has: a statement
    // stuck on a server that stopped answering, or a row lock a host's transaction keeps, ends
    // it with an error rather than hang it.
    pg::connect::guard_session(store.client(), &choice.target).map_err(at)?;
    Ok(store)
}

#[cfg(feature = "postgres")]
/// `hookq init`'s part: connects, creates or upgrades the schema and the queue's row; the
/// schema version the database is at now.
fn set_up(choice: &pg::PgChoice) -> Result<i64, Error> {
    let mut store = open_database(choice)?;
    pg::schema::applied_version(store.client())
        .map_err(|e| super::check::placed(choice, e))
        .map(|v| v.unwrap_or_else(pg::schema::schema_version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(check_remote("origin").is_ok());
        assert!(check_remote("my-fork.2").is_ok());
        for bad in ["", "-x", "a b", "a'b", "a;b", "o/x"] {
            assert!(check_remote(bad).is_err(), "{bad}");
        }
        assert!(check_branch("release/1.0").is_ok());
        for bad in ["", "a//b", "a/", "/a", "a..b", "x.lock", "a b"] {
            assert!(check_branch(bad).is_err(), "{bad}");
        }
    }
}
