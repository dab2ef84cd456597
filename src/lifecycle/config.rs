//! `.arashi/config.json`: the workspace's repositories and its inline hooks, validated as a
//! whole before anything is discovered, run or changed. Every error names the file and the
//! key's path.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::jsontree::{self, Json};
use super::names;
use super::point::Lifecycle;
use super::snippet::Snippet;

/// The config file's path below a workspace root.
pub const CONFIG_FILE: &str = ".arashi/config.json";

/// Every lifecycle hook's timeout unless `hooks.timeout` sets another.
pub const DEFAULT_TIMEOUT_MS: u64 = 300_000;

/// The largest `hooks.timeout`.
pub const MAX_TIMEOUT_MS: u64 = 2_147_483_647;

/// Why the config cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The config file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not JSON (or holds what serde_json cannot read: a key given twice, a number
    /// too large for a double).
    #[error("invalid config {}: {}{message}", path.display(), key.as_ref().map(|k| format!("{k}: ")).unwrap_or_default())]
    Syntax {
        /// The config file.
        path: PathBuf,
        /// The key's path where reading stopped, when inside one.
        key: Option<String>,
        /// serde_json's message, which gives the line and column.
        message: String,
    },
    /// A key holds a value hookq refuses.
    #[error("invalid config {}: {key}: {why}", path.display())]
    Invalid {
        /// The config file.
        path: PathBuf,
        /// The key's path, dotted (`repos.web.hooks.pre-create.bash`).
        key: String,
        /// What is wrong.
        why: String,
    },
}

/// The inline hooks of one owner, one optional entry per lifecycle.
#[derive(Debug, Clone, Default)]
pub struct InlineHooks([Option<InlineHook>; 4]);

impl InlineHooks {
    /// The inline hook configured for `lc`, if any.
    pub fn get(&self, lc: Lifecycle) -> Option<&InlineHook> {
        self.0[lc.index()].as_ref()
    }
}

/// One inline hook: a closed interpreter map. A plain string is its `bash` variant.
#[derive(Debug, Clone)]
pub struct InlineHook {
    /// The Bash variant, the only one that runs on POSIX.
    pub bash: Option<Snippet>,
    /// Whether a PowerShell variant is given (accepted, never run here).
    pub powershell: bool,
    /// Whether a cmd variant is given (accepted, never run here).
    pub cmd: bool,
}

/// One configured repository.
#[derive(Debug, Clone)]
pub struct Repo {
    /// Its name (the key under `repos`).
    pub name: String,
    /// Its source checkout: `repos.<name>.path` joined to the workspace root, lexically
    /// normalized.
    pub checkout: PathBuf,
    /// `repos.<name>.hooks`.
    pub hooks: InlineHooks,
}

/// A validated `.arashi/config.json`.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file it was read from.
    pub path: PathBuf,
    /// The repositories, in file order.
    pub repos: Vec<Repo>,
    /// `hooks.scripts`: the workspace's inline hooks.
    pub scripts: InlineHooks,
    /// `hooks.timeout`, every lifecycle hook's timeout.
    pub timeout: Duration,
    /// `hooks.interpreters.bash`, when configured.
    pub bash: Option<PathBuf>,
    /// The keys hookq does not read outside the hook tables, ignored, one warning each
    /// (`/ws/.arashi/config.json: repos.api.hook: unknown key, ignored (did you mean
    /// repos.api.hooks?)`).
    pub warnings: Vec<String>,
}

impl Config {
    /// Reads and validates the config of the workspace at `root` (canonical).
    pub fn load(root: &Path) -> Result<Config, ConfigError> {
        let path = root.join(CONFIG_FILE);
        let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
            path: path.clone(),
            source,
        })?;
        Config::parse(&text, root, &path)
    }

    /// Validates `text`, the config of the workspace at `root`, read from `path`.
    pub fn parse(text: &str, root: &Path, path: &Path) -> Result<Config, ConfigError> {
        let tree = jsontree::parse(text).map_err(|e| ConfigError::Syntax {
            path: path.to_path_buf(),
            key: jsontree::key_at(text, e.line(), e.column()),
            message: e.to_string(),
        })?;
        let v = Validator { path };
        let top = v.object(&tree, "")?;
        let mut config = Config {
            path: path.to_path_buf(),
            repos: Vec::new(),
            scripts: InlineHooks::default(),
            timeout: Duration::from_millis(DEFAULT_TIMEOUT_MS),
            bash: None,
            warnings: Vec::new(),
        };
        for (key, value) in top {
            match key.as_str() {
                "hooks" => v.hooks(value, &mut config)?,
                "repos" => config.repos = v.repos(value, root, &mut config.warnings)?,
                // The file is arashi's, shared with its other settings: keys hookq does not
                // read are left alone, with a warning, since a misspelt key loses its hooks.
                // Inside the hook tables, hookq is strict.
                _ => config
                    .warnings
                    .push(v.unknown("", key, &["hooks", "repos"])),
            }
        }
        Ok(config)
    }

    /// The repository named `name`.
    pub fn repo(&self, name: &str) -> Option<&Repo> {
        self.repos.iter().find(|r| r.name == name)
    }
}

struct Validator<'a> {
    path: &'a Path,
}

impl Validator<'_> {
    /// The warning for `key`, unknown under `parent` (`""`: the top level), naming a known
    /// key it is likely a misspelling of.
    fn unknown(&self, parent: &str, key: &str, known: &[&str]) -> String {
        let at = |k: &str| {
            if parent.is_empty() {
                k.to_string()
            } else {
                format!("{parent}.{k}")
            }
        };
        let close = known
            .iter()
            .map(|k| (distance(&key.to_ascii_lowercase(), k), k))
            .filter(|(d, k)| *d <= 2 && *d < k.len())
            .min_by_key(|(d, _)| *d);
        format!(
            "{}: {}: unknown key, ignored{}",
            self.path.display(),
            at(key),
            close.map_or_else(String::new, |(_, k)| format!(" (did you mean {}?)", at(k)))
        )
    }

    fn err(&self, key: &str, why: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            path: self.path.to_path_buf(),
            key: if key.is_empty() {
                "(top level)".into()
            } else {
                key.into()
            },
            why: why.into(),
        }
    }

    fn object<'j>(&self, j: &'j Json, key: &str) -> Result<&'j [(String, Json)], ConfigError> {
        match j {
            Json::Object(pairs) => Ok(pairs),
            other => Err(self.err(key, format!("expected an object, found {}", other.kind()))),
        }
    }

    fn hooks(&self, j: &Json, config: &mut Config) -> Result<(), ConfigError> {
        for (key, value) in self.object(j, "hooks")? {
            let at = format!("hooks.{key}");
            match key.as_str() {
                "scripts" => config.scripts = self.inline_hooks(value, &at)?,
                "timeout" => config.timeout = Duration::from_millis(self.timeout(value, &at)?),
                "interpreters" => {
                    for (name, value) in self.object(value, &at)? {
                        let at = format!("{at}.{name}");
                        let exe = match value {
                            Json::String(s) if Path::new(s).is_absolute() => PathBuf::from(s),
                            Json::String(_) => {
                                return Err(self.err(&at, "expected an absolute path"));
                            }
                            other => {
                                return Err(self
                                    .err(&at, format!("expected a path, found {}", other.kind())));
                            }
                        };
                        match name.as_str() {
                            "bash" => config.bash = Some(exe),
                            // Accepted so one config serves every platform; never run here.
                            "powershell" | "cmd" => {}
                            _ => {
                                return Err(self.err(
                                    &at,
                                    "unknown interpreter (expected bash, powershell or cmd)",
                                ));
                            }
                        }
                    }
                }
                _ => {
                    return Err(self.err(
                        &at,
                        "unknown key (expected scripts, timeout or interpreters)",
                    ));
                }
            }
        }
        Ok(())
    }

    fn timeout(&self, j: &Json, key: &str) -> Result<u64, ConfigError> {
        let range = format!("an integer number of milliseconds from 1 through {MAX_TIMEOUT_MS}");
        match j {
            Json::Number(n) => match n.as_u64() {
                Some(ms) if (1..=MAX_TIMEOUT_MS).contains(&ms) => Ok(ms),
                _ if n.is_f64() => Err(self.err(
                    key,
                    format!("expected {range}, found a number that is not an integer ({n})"),
                )),
                _ => Err(self.err(key, format!("expected {range}, found {n}"))),
            },
            other => Err(self.err(key, format!("expected {range}, found {}", other.kind()))),
        }
    }

    fn inline_hooks(&self, j: &Json, key: &str) -> Result<InlineHooks, ConfigError> {
        let mut hooks = InlineHooks::default();
        for (name, value) in self.object(j, key)? {
            let at = format!("{key}.{name}");
            let Some(lc) = Lifecycle::parse(name) else {
                return Err(self.err(
                    &at,
                    "unknown lifecycle (expected pre-create, post-create, pre-remove or post-remove)",
                ));
            };
            hooks.0[lc.index()] = Some(self.inline_hook(value, &at)?);
        }
        Ok(hooks)
    }

    fn inline_hook(&self, j: &Json, key: &str) -> Result<InlineHook, ConfigError> {
        let mut hook = InlineHook {
            bash: None,
            powershell: false,
            cmd: false,
        };
        match j {
            Json::String(s) => hook.bash = Some(self.snippet(s, key)?),
            Json::Object(pairs) => {
                if pairs.is_empty() {
                    return Err(self.err(
                        key,
                        "an interpreter map needs at least one of bash, powershell or cmd",
                    ));
                }
                for (name, value) in pairs {
                    let at = format!("{key}.{name}");
                    let Json::String(s) = value else {
                        return Err(self.err(
                            &at,
                            format!("expected a command string, found {}", value.kind()),
                        ));
                    };
                    let snippet = self.snippet(s, &at)?;
                    match name.as_str() {
                        "bash" => hook.bash = Some(snippet),
                        "powershell" => hook.powershell = true,
                        "cmd" => hook.cmd = true,
                        _ => {
                            return Err(self.err(
                                &at,
                                "unknown interpreter (expected bash, powershell or cmd)",
                            ));
                        }
                    }
                }
            }
            other => {
                return Err(self.err(
                    key,
                    format!(
                        "expected a command string or an interpreter map, found {}",
                        other.kind()
                    ),
                ));
            }
        }
        Ok(hook)
    }

    fn snippet(&self, s: &str, key: &str) -> Result<Snippet, ConfigError> {
        if s.trim().is_empty() {
            return Err(self.err(key, "the command is empty"));
        }
        if s.contains('\0') {
            return Err(self.err(key, "the command holds a NUL character"));
        }
        Ok(Snippet::new(s.to_owned()))
    }

    fn repos(
        &self,
        j: &Json,
        root: &Path,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<Repo>, ConfigError> {
        let mut repos = Vec::new();
        for (name, value) in self.object(j, "repos")? {
            let at = format!("repos.{name}");
            if let Some(why) = names::repo_name_problem(name) {
                return Err(self.err(&at, format!("the repository name {why}")));
            }
            let mut path = None;
            let mut hooks = InlineHooks::default();
            for (key, value) in self.object(value, &at)? {
                let at = format!("{at}.{key}");
                match key.as_str() {
                    "path" => match value {
                        Json::String(p) if p.is_empty() => {
                            return Err(self.err(&at, "the path is empty"));
                        }
                        Json::String(p) if Path::new(p).is_absolute() => {
                            return Err(
                                self.err(&at, "expected a path relative to the workspace root")
                            );
                        }
                        Json::String(p) => path = Some(names::normalize(&root.join(p))),
                        other => {
                            return Err(
                                self.err(&at, format!("expected a path, found {}", other.kind()))
                            );
                        }
                    },
                    "hooks" => hooks = self.inline_hooks(value, &at)?,
                    _ => {
                        let repo = format!("repos.{name}");
                        warnings.push(self.unknown(&repo, key, &["path", "hooks"]));
                    }
                }
            }
            let Some(checkout) = path else {
                return Err(self.err(
                    &format!("{at}.path"),
                    "missing: every repository needs a path",
                ));
            };
            repos.push(Repo {
                name: name.clone(),
                checkout,
                hooks,
            });
        }
        Ok(repos)
    }
}

/// The edit distance between `a` and `b` (insertions, deletions, substitutions).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(here + 1);
            prev = here;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("/ws"), Path::new("/ws/.arashi/config.json"))
    }

    fn invalid(text: &str) -> (String, String) {
        match parse(text) {
            Err(ConfigError::Invalid { key, why, .. }) => (key, why),
            other => panic!("expected an invalid key, got {other:?}"),
        }
    }

    #[test]
    fn a_full_config_reads_back() {
        let c = parse(
            r#"{"hooks": {"timeout": 1500, "interpreters": {"bash": "/opt/bash"},
                 "scripts": {"pre-create": "true", "post-remove": {"bash": "x", "cmd": "y"}}},
                "repos": {"web": {"path": "repos/web", "hooks": {"post-create": {"powershell": "p"}}},
                          "api": {"path": "./repos/../api"}},
                "other": {"left": "alone"}}"#,
        )
        .unwrap();
        assert_eq!(c.timeout, Duration::from_millis(1500));
        assert_eq!(c.bash.as_deref(), Some(Path::new("/opt/bash")));
        assert_eq!(
            c.repos.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
            ["web", "api"]
        );
        assert_eq!(c.repos[1].checkout, Path::new("/ws/api"));
        assert!(c.scripts.get(Lifecycle::PreCreate).unwrap().bash.is_some());
        let pr = c.scripts.get(Lifecycle::PostRemove).unwrap();
        assert!(pr.bash.is_some() && pr.cmd && !pr.powershell);
        let web = c.repos[0].hooks.get(Lifecycle::PostCreate).unwrap();
        assert!(web.bash.is_none() && web.powershell);
        assert!(c.scripts.get(Lifecycle::PreRemove).is_none());
    }

    #[test]
    fn the_default_timeout_is_five_minutes() {
        assert_eq!(parse("{}").unwrap().timeout, Duration::from_millis(300_000));
    }

    #[test]
    fn every_invalid_timeout_is_refused_at_its_key() {
        for bad in [
            "0",
            "-1",
            "1.5",
            "\"300\"",
            "2147483648",
            "99999999999999999999999999",
            "1e3",
            "null",
            "true",
            "[1]",
        ] {
            let (key, why) = invalid(&format!(r#"{{"hooks": {{"timeout": {bad}}}}}"#));
            assert_eq!(key, "hooks.timeout", "{bad}");
            assert!(why.contains("from 1 through 2147483647"), "{bad}: {why}");
        }
        assert!(parse(r#"{"hooks": {"timeout": 2147483647}}"#).is_ok());
        assert!(parse(r#"{"hooks": {"timeout": 1}}"#).is_ok());
        // Past what a double holds: still a config error at its key, with line and column.
        let huge = format!(r#"{{"hooks": {{"timeout": 1{}}}}}"#, "0".repeat(400));
        let e = parse(&huge).unwrap_err();
        assert!(
            matches!(&e, ConfigError::Syntax { key: Some(k), .. } if k == "hooks.timeout"),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .ends_with("hooks.timeout: number out of range at line 1 column 423"),
            "{e}"
        );
    }

    #[test]
    fn hook_tables_are_closed() {
        assert_eq!(
            invalid(r#"{"hooks": {"scripts": {"pre_create": "x"}}}"#).0,
            "hooks.scripts.pre_create"
        );
        assert_eq!(
            invalid(r#"{"hooks": {"scripts": {"pre-create": {"zsh": "x"}}}}"#).0,
            "hooks.scripts.pre-create.zsh"
        );
        assert_eq!(
            invalid(r#"{"hooks": {"scripts": {"pre-create": {}}}}"#).0,
            "hooks.scripts.pre-create"
        );
        assert_eq!(
            invalid(r#"{"hooks": {"scripts": {"pre-create": 3}}}"#).0,
            "hooks.scripts.pre-create"
        );
        assert_eq!(invalid(r#"{"hooks": {"timeuot": 3}}"#).0, "hooks.timeuot");
        assert_eq!(
            invalid(r#"{"hooks": {"interpreters": {"bash": "bash"}}}"#).0,
            "hooks.interpreters.bash"
        );
        assert_eq!(
            invalid(r#"{"repos": {"web": {"path": "w", "hooks": {"post-create": {"bash": 1}}}}}"#)
                .0,
            "repos.web.hooks.post-create.bash"
        );
        assert_eq!(invalid(r#"{"repos": {"web": {}}}"#).0, "repos.web.path");
        assert_eq!(
            invalid(r#"{"repos": {"a/b": {"path": "x"}}}"#).0,
            "repos.a/b"
        );
        assert_eq!(
            invalid(r#"{"repos": {"w": {"path": "/abs"}}}"#).0,
            "repos.w.path"
        );
        assert_eq!(
            invalid(r#"{"hooks": {"scripts": {"pre-create": "  "}}}"#).0,
            "hooks.scripts.pre-create"
        );
        assert_eq!(invalid("[]").0, "(top level)");
        assert!(matches!(
            parse(r#"{"hooks": {"timeout": 1, "timeout": 2}}"#),
            Err(ConfigError::Syntax { .. })
        ));
    }

    #[test]
    fn errors_never_carry_snippet_text() {
        let text = r#"{"hooks": {"scripts": {"pre-create": {"bash": "echo SECRET", "fish": "echo SECRET"}}}}"#;
        let e = parse(text).unwrap_err();
        assert!(!e.to_string().contains("SECRET"), "{e}");
        assert!(!format!("{e:?}").contains("SECRET"));
        let c = parse(r#"{"hooks": {"scripts": {"pre-create": "echo SECRET"}}}"#).unwrap();
        assert!(!format!("{c:?}").contains("SECRET"));
    }
}
