//! Parsing `config.toml` from spans, so every error names the file, the line and the key.
//!
//! `[repository]`, `[integration]` and `[gate]` are shared with the arc task runner, which keeps
//! keys of its own there, so unknown keys in them are ignored; the keys hookq reads are checked.
//! `[hooks]` and `[queue]` belong to hookq: an unknown key there is an error. Unknown top-level
//! tables are left to their owners, except one a typo away from hookq's.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::queue::phase::Point;

/// The most command lines one point may have: its logs are numbered with two digits.
pub const MAX_COMMANDS: usize = 99;

/// `queue.max_log_file_bytes` when unset: 16 MiB, thousands of the short runs a hook usually
/// logs, and a few hundred such files before a task's logs take a gigabyte.
pub const DEFAULT_MAX_LOG_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The largest config file read; anything bigger is refused rather than parsed.
pub const MAX_CONFIG_BYTES: usize = 1024 * 1024;

/// A configuration problem, located.
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
    /// The file was read but is not valid.
    #[error("{}{}: {}{message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default(), key.as_deref().map(|k| format!("{k}: ")).unwrap_or_default())]
    Invalid {
        /// The config file.
        path: PathBuf,
        /// The 1-based line, when known.
        line: Option<usize>,
        /// The dotted key, when known.
        key: Option<String>,
        /// What is wrong.
        message: String,
    },
}

/// A key in a table hookq shares with the arc runner that hookq does not read but that is a typo
/// away from one it does (`gate.comand_timeout_secs`): not an error, since the table is also
/// arc's, but worth a `warning:` line, since hookq goes on with the key's default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigWarning {
    /// The config file.
    pub path: PathBuf,
    /// The 1-based line of the key.
    pub line: usize,
    /// The dotted key as written (escaped to one line).
    pub key: String,
    /// The dotted key hookq reads that it is near.
    pub meant: String,
}

impl std::fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: {}: not a key hookq reads; did you mean {}?",
            self.path.display(),
            self.line,
            self.key,
            self.meant
        )
    }
}

/// `[repository]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Repository {
    /// The main branch; the merge target when `integration.target_branch` is unset.
    pub main_branch: String,
    /// The remote the default `after_merge` lines delete branches from.
    pub remote: String,
}

/// `[gate]`: limits on one hook command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gate {
    /// How long one command may run before its process group gets SIGTERM.
    pub command_timeout: Duration,
    /// How long after SIGTERM the group gets SIGKILL.
    pub kill_grace: Duration,
    /// The most output one run appends to its log.
    pub max_log_bytes: u64,
}

/// `[queue]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Queue {
    /// Passes that may start a point without clearing it before it is parked as `abandoned`.
    pub max_interrupted_runs: u32,
    /// How long history rows are kept.
    pub keep_history_days: u32,
    /// The size past which a log file loses its oldest runs, before the next run appends.
    pub max_log_file_bytes: u64,
    /// `queue.database`: a PostgreSQL connection string (URL or key/value pairs); unset for the
    /// workspace's SQLite file. Never serialized: it may hold a password.
    #[serde(skip)]
    pub database: Option<String>,
    /// `queue.name`: the queue's name in that database (see `hookq::queue::pg::choose`).
    pub name: Option<String>,
}

/// The whole configuration hookq reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Config {
    /// `[repository]`.
    pub repository: Repository,
    /// `integration.target_branch`.
    pub target_branch: Option<String>,
    /// `[gate]`.
    pub gate: Gate,
    /// `[queue]`.
    pub queue: Queue,
    hooks: [Vec<String>; 5],
    #[serde(skip)]
    warnings: Vec<ConfigWarning>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            repository: Repository {
                main_branch: "main".into(),
                remote: "origin".into(),
            },
            target_branch: None,
            gate: Gate {
                command_timeout: Duration::from_secs(600),
                kill_grace: Duration::from_secs(5),
                max_log_bytes: 64 * 1024 * 1024,
            },
            queue: Queue {
                max_interrupted_runs: 5,
                keep_history_days: 30,
                max_log_file_bytes: DEFAULT_MAX_LOG_FILE_BYTES,
                database: None,
                name: None,
            },
            hooks: Default::default(),
            warnings: Vec::new(),
        }
    }
}

impl Config {
    /// The command lines configured for `point`, in order.
    pub fn hooks(&self, point: Point) -> &[String] {
        &self.hooks[point as usize]
    }

    /// Sets the command lines for `point`.
    pub fn set_hooks(&mut self, point: Point, lines: Vec<String>) {
        self.hooks[point as usize] = lines;
    }

    /// Keys of the shared tables that hookq does not read but that are a typo away from one it
    /// does, in the order of the file.
    pub fn warnings(&self) -> &[ConfigWarning] {
        &self.warnings
    }

    /// The branch merges target: `integration.target_branch`, else `repository.main_branch`.
    pub fn target_branch(&self) -> &str {
        self.target_branch
            .as_deref()
            .unwrap_or(&self.repository.main_branch)
    }

    /// Reads and validates the file at `path`.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let bytes = read_bounded(path)?;
        Self::parse(path, &bytes)
    }

    /// Validates `bytes` as the content of `path` (used only to name it in errors).
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Self, ConfigError> {
        Parser { path, src: "" }.parse(bytes)
    }
}

pub(super) fn read_bounded(path: &Path) -> Result<Vec<u8>, ConfigError> {
    use std::io::Read;
    let read_err = |source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read_err)?;
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(read_err)?;
    if bytes.len() > MAX_CONFIG_BYTES {
        return Err(ConfigError::Invalid {
            path: path.to_path_buf(),
            line: None,
            key: None,
            message: format!("file is larger than {MAX_CONFIG_BYTES} bytes"),
        });
    }
    Ok(bytes)
}

struct Parser<'a> {
    path: &'a Path,
    src: &'a str,
}

type Table<'i> = DeTable<'i>;

/// The keys hookq reads in the tables it shares with the arc runner.
const SHARED_KEYS: [(&str, &[&str]); 3] = [
    ("repository", &["main_branch", "remote"]),
    ("integration", &["target_branch"]),
    (
        "gate",
        &["command_timeout_secs", "kill_grace_secs", "max_log_bytes"],
    ),
];

/// The top-level tables hookq owns (`[repository]`, `[integration]` and `[gate]` it shares with
/// the arc runner).
const OWN_TABLES: [&str; 2] = ["queue", "hooks"];

/// The table whose `[header]` (or `[[header]]`) is the last one in `src` before byte `at`.
fn table_before(src: &str, at: usize) -> Option<&str> {
    src.get(..at)?.lines().rev().find_map(|line| {
        let line = line.trim();
        let inner = line.strip_prefix('[')?.split(']').next()?;
        Some(inner.trim_start_matches('[').trim()).filter(|t| !t.is_empty())
    })
}

/// Whether `name` is `table` but for case, or one letter added, dropped or changed, or two
/// neighbours swapped.
pub(crate) fn near(name: &str, table: &str) -> bool {
    let (a, b) = (name.to_lowercase(), table);
    if a == b {
        return true;
    }
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if long.len() - short.len() > 1 {
        return false;
    }
    let head = short.iter().zip(long).take_while(|(x, y)| x == y).count();
    if short.len() == long.len() {
        let swapped = head + 1 < short.len()
            && short[head] == long[head + 1]
            && short[head + 1] == long[head]
            && short[head + 2..] == long[head + 2..];
        swapped || short[head + 1..] == long[head + 1..]
    } else {
        short[head..] == long[head + 1..]
    }
}

impl<'a> Parser<'a> {
    fn err(
        &self,
        span: Option<Range<usize>>,
        key: Option<&str>,
        message: impl Into<String>,
    ) -> ConfigError {
        let line = span.map(|s| {
            let end = s.start.min(self.src.len());
            self.src.as_bytes()[..end]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1
        });
        ConfigError::Invalid {
            path: self.path.to_path_buf(),
            line,
            // Escaped: a key holding a newline must not print a second line (a forged
            // `warning:` one, say).
            key: key.map(|k| k.escape_debug().to_string()),
            message: message.into(),
        }
    }

    fn parse(mut self, bytes: &'a [u8]) -> Result<Config, ConfigError> {
        let src = match std::str::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => {
                let line = bytes[..e.valid_up_to()]
                    .iter()
                    .filter(|&&b| b == b'\n')
                    .count()
                    + 1;
                return Err(ConfigError::Invalid {
                    path: self.path.to_path_buf(),
                    line: Some(line),
                    key: None,
                    message: format!("not valid UTF-8 (byte {})", e.valid_up_to()),
                });
            }
        };
        self.src = src;
        let doc = DeTable::parse(src).map_err(|e| {
            let mut msg = e.message().trim().to_owned();
            if let Some(first) = msg.lines().next() {
                msg = first.to_owned();
            }
            // A duplicate key's span is the key as written: name it with its table, as every
            // other error does.
            let key = e
                .span()
                .filter(|_| msg.starts_with("duplicate key"))
                .and_then(|s| Some((src.get(s.clone())?.trim(), s.start)))
                .filter(|(k, _)| !k.is_empty())
                .map(|(k, at)| match table_before(src, at) {
                    Some(table) => format!("{table}.{k}"),
                    None => k.to_owned(),
                });
            self.err(e.span(), key.as_deref(), msg)
        })?;
        let doc = doc.get_ref();
        // Other tables belong to the arc runner, but one a letter or a capital away from one
        // hookq owns is a typo: read as absent, a misspelt `[hooks]` would clear every point
        // without running it. (Near the shared tables, a name may well be one of arc's.)
        for (k, _) in doc.iter() {
            let name = k.get_ref().as_ref();
            if let Some(meant) = OWN_TABLES.iter().find(|t| **t != name && near(name, t)) {
                return Err(self.err(
                    Some(k.span()),
                    Some(name),
                    format!("unknown table, did you mean [{meant}]?"),
                ));
            }
        }
        let mut cfg = Config {
            warnings: self.near_misses(doc),
            ..Config::default()
        };

        if let Some(t) = self.table(doc, "repository")? {
            if let Some(v) = self.string(t, "repository", "main_branch")? {
                cfg.repository.main_branch = v;
            }
            if let Some(v) = self.string(t, "repository", "remote")? {
                cfg.repository.remote = v;
            }
        }
        if let Some(t) = self.table(doc, "integration")? {
            cfg.target_branch = self.string(t, "integration", "target_branch")?;
        }
        if let Some(t) = self.table(doc, "gate")? {
            if let Some(v) = self.int(t, "gate", "command_timeout_secs", 1, 7 * 24 * 3600)? {
                cfg.gate.command_timeout = Duration::from_secs(v);
            }
            if let Some(v) = self.int(t, "gate", "kill_grace_secs", 1, 3600)? {
                cfg.gate.kill_grace = Duration::from_secs(v);
            }
            if let Some(v) = self.int(t, "gate", "max_log_bytes", 1024, 1 << 40)? {
                cfg.gate.max_log_bytes = v;
            }
        }
        if let Some(t) = self.table(doc, "queue")? {
            self.only_known(
                t,
                "queue",
                &[
                    "max_interrupted_runs",
                    "keep_history_days",
                    "max_log_file_bytes",
                    "database",
                    "name",
                ],
                "",
            )?;
            if let Some(v) = self.int(t, "queue", "max_interrupted_runs", 1, 1000)? {
                cfg.queue.max_interrupted_runs = v as u32;
            }
            if let Some(v) = self.int(t, "queue", "keep_history_days", 1, 36500)? {
                cfg.queue.keep_history_days = v as u32;
            }
            if let Some(v) = self.int(t, "queue", "max_log_file_bytes", 1024, 1 << 40)? {
                cfg.queue.max_log_file_bytes = v;
            }
            cfg.queue.database = self.string(t, "queue", "database")?;
            cfg.queue.name = self.string(t, "queue", "name")?;
        }
        if let Some(t) = self.table(doc, "hooks")? {
            let names = Point::ALL.map(Point::as_str);
            self.only_known(t, "hooks", &names, " (hook points: after_merge, after_fail, after_rework, after_awaiting_human, after_proposed)")?;
            for point in Point::ALL {
                if let Some(lines) = self.lines(t, point.as_str())? {
                    cfg.set_hooks(point, lines);
                }
            }
        }
        Ok(cfg)
    }

    /// The keys of the shared tables a typo away from one hookq reads (arc's own keys, further
    /// away, are left alone).
    fn near_misses(&self, doc: &Table<'a>) -> Vec<ConfigWarning> {
        let mut out = Vec::new();
        for (section, known) in SHARED_KEYS {
            let Some(DeValue::Table(t)) = doc.get(section).map(Spanned::get_ref) else {
                continue;
            };
            for (k, _) in t.iter() {
                let name = k.get_ref().as_ref();
                if known.contains(&name) {
                    continue;
                }
                if let Some(meant) = known.iter().find(|known| near(name, known)) {
                    let key = format!("{section}.{name}");
                    if let ConfigError::Invalid {
                        path,
                        line: Some(line),
                        key: Some(key),
                        ..
                    } = self.err(Some(k.span()), Some(&key), "")
                    {
                        out.push(ConfigWarning {
                            path,
                            line,
                            key,
                            meant: format!("{section}.{meant}"),
                        });
                    }
                }
            }
        }
        out.sort_by_key(|w| w.line);
        out
    }

    fn table<'t>(
        &self,
        doc: &'t Table<'a>,
        name: &str,
    ) -> Result<Option<&'t Table<'a>>, ConfigError> {
        match doc.get(name) {
            None => Ok(None),
            Some(v) => match v.get_ref() {
                DeValue::Table(t) => Ok(Some(t)),
                other => Err(self.err(
                    Some(v.span()),
                    Some(name),
                    format!("expected a table, found {}", other.type_str()),
                )),
            },
        }
    }

    fn only_known(
        &self,
        t: &Table<'a>,
        section: &str,
        known: &[&str],
        hint: &str,
    ) -> Result<(), ConfigError> {
        for (k, _) in t.iter() {
            let name = k.get_ref().as_ref();
            if !known.contains(&name) {
                let key = format!("{section}.{name}");
                // A misspelt key of hookq's own tables is read as absent: `databse` would put
                // the queue in the SQLite file without a word.
                let message = match known.iter().find(|known| near(name, known)) {
                    Some(meant) => format!("unknown key, did you mean {section}.{meant}?"),
                    None => format!("unknown key{hint}"),
                };
                return Err(self.err(Some(k.span()), Some(&key), message));
            }
        }
        Ok(())
    }

    fn value<'t>(&self, t: &'t Table<'a>, name: &str) -> Option<&'t Spanned<DeValue<'a>>> {
        t.get(name)
    }

    fn string(
        &self,
        t: &Table<'a>,
        section: &str,
        name: &str,
    ) -> Result<Option<String>, ConfigError> {
        let Some(v) = self.value(t, name) else {
            return Ok(None);
        };
        let key = format!("{section}.{name}");
        match v.get_ref() {
            DeValue::String(s) if s.is_empty() || s.contains('\0') => Err(self.err(
                Some(v.span()),
                Some(&key),
                "must be a non-empty string without NUL",
            )),
            DeValue::String(s) => Ok(Some(s.to_string())),
            other => Err(self.err(
                Some(v.span()),
                Some(&key),
                format!("expected a string, found {}", other.type_str()),
            )),
        }
    }

    fn int(
        &self,
        t: &Table<'a>,
        section: &str,
        name: &str,
        min: u64,
        max: u64,
    ) -> Result<Option<u64>, ConfigError> {
        let Some(v) = self.value(t, name) else {
            return Ok(None);
        };
        let key = format!("{section}.{name}");
        let bad = |what: String| Err(self.err(Some(v.span()), Some(&key), what));
        match v.get_ref() {
            DeValue::Integer(i) => {
                let digits = i.as_str().replace('_', "");
                match i64::from_str_radix(&digits, i.radix()) {
                    Ok(n) if n >= 0 && (min..=max).contains(&(n as u64)) => Ok(Some(n as u64)),
                    _ => bad(format!(
                        "must be a whole number from {min} to {max}, found {}",
                        i.as_str()
                    )),
                }
            }
            DeValue::Float(f) => bad(format!(
                "must be a whole number from {min} to {max}, found {}",
                f.as_str()
            )),
            other => bad(format!(
                "expected a whole number, found {}",
                other.type_str()
            )),
        }
    }

    fn lines(&self, t: &Table<'a>, name: &str) -> Result<Option<Vec<String>>, ConfigError> {
        let Some(v) = self.value(t, name) else {
            return Ok(None);
        };
        let key = format!("hooks.{name}");
        let DeValue::Array(items) = v.get_ref() else {
            return Err(self.err(
                Some(v.span()),
                Some(&key),
                format!(
                    "expected an array of command lines, found {}",
                    v.get_ref().type_str()
                ),
            ));
        };
        if items.len() > MAX_COMMANDS {
            // Each command's log is `<point>-NN.log`, NN two digits.
            return Err(self.err(
                Some(v.span()),
                Some(&key),
                format!(
                    "{} command lines; a point runs at most {MAX_COMMANDS} (its logs are numbered 01 to 99)",
                    items.len()
                ),
            ));
        }
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let key = format!("{key}[{i}]");
            match item.get_ref() {
                DeValue::String(s) if s.trim().is_empty() => {
                    return Err(self.err(Some(item.span()), Some(&key), "command line is empty"));
                }
                DeValue::String(s) if s.contains('\0') => {
                    return Err(self.err(
                        Some(item.span()),
                        Some(&key),
                        "command line holds a NUL byte",
                    ));
                }
                DeValue::String(s) => out.push(s.to_string()),
                other => {
                    return Err(self.err(
                        Some(item.span()),
                        Some(&key),
                        format!(
                            "expected a command line (string), found {}",
                            other.type_str()
                        ),
                    ));
                }
            }
        }
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Config, ConfigError> {
        Config::parse(Path::new("/ws/config.toml"), s.as_bytes())
    }

    fn err(s: &str) -> String {
        parse(s).unwrap_err().to_string()
    }

    #[test]
    fn defaults_when_empty() {
        assert_eq!(parse("").unwrap(), Config::default());
    }

    #[test]
    fn reads_every_key() {
        let c = parse(
            "[repository]\nmain_branch = 'trunk'\nremote = 'up'\n[integration]\ntarget_branch = 'rel'\n\
             [gate]\ncommand_timeout_secs = 7\nkill_grace_secs = 2\nmax_log_bytes = 4096\n\
             [queue]\nmax_interrupted_runs = 3\nkeep_history_days = 9\nmax_log_file_bytes = 8192\n\
             database = 'postgres://u:pw@db/q'\nname = 'acme/widgets'\n\
             [hooks]\nafter_merge = ['a', 'b']\nafter_proposed = ['c']\n",
        )
        .unwrap();
        assert_eq!(c.repository.remote, "up");
        assert_eq!(c.target_branch(), "rel");
        assert_eq!(c.gate.command_timeout, Duration::from_secs(7));
        assert_eq!(c.gate.kill_grace, Duration::from_secs(2));
        assert_eq!(c.gate.max_log_bytes, 4096);
        assert_eq!(c.queue.max_interrupted_runs, 3);
        assert_eq!(c.queue.keep_history_days, 9);
        assert_eq!(c.queue.max_log_file_bytes, 8192);
        assert_eq!(c.queue.database.as_deref(), Some("postgres://u:pw@db/q"));
        assert_eq!(c.queue.name.as_deref(), Some("acme/widgets"));
        let shown = serde_json::to_string(&c).unwrap();
        assert!(!shown.contains("pw@"), "the password is never serialized: {shown}");
        assert_eq!(c.hooks(Point::AfterMerge), ["a", "b"]);
        assert_eq!(c.hooks(Point::AfterProposed), ["c"]);
        assert!(c.hooks(Point::AfterFail).is_empty());
    }

    #[test]
    fn errors_name_file_line_and_key() {
        assert_eq!(
            err("[hooks]\nafter_merge = []\nafter_mrge = ['x']\n"),
            "/ws/config.toml:3: hooks.after_mrge: unknown key, did you mean hooks.after_merge?"
        );
        assert_eq!(
            err("[gate]\n\ncommand_timeout_secs = 0\n"),
            "/ws/config.toml:3: gate.command_timeout_secs: must be a whole number from 1 to 604800, found 0"
        );
        assert!(
            err("[gate]\ncommand_timeout_secs = 1.5\n")
                .contains(":2: gate.command_timeout_secs: must be a whole number")
        );
        assert!(
            err("[gate]\ncommand_timeout_secs = -3\n").contains(":2: gate.command_timeout_secs")
        );
        assert!(
            err("[gate]\ncommand_timeout_secs = '10'\n")
                .contains("expected a whole number, found string")
        );
        assert!(err("[gate]\nkill_grace_secs = 99999999999999999999\n").contains(":2:"));
        assert!(
            err("[hooks]\nafter_fail = 'echo'\n")
                .contains(":2: hooks.after_fail: expected an array")
        );
        assert!(
            err("[hooks]\nafter_fail = ['ok',\n  3]\n")
                .contains(":3: hooks.after_fail[1]: expected a command line")
        );
        assert!(
            err("[queue]\nmax_interrupted = 2\n")
                .contains(":2: queue.max_interrupted: unknown key")
        );
        assert!(err("hooks = 3\n").contains(":1: hooks: expected a table"));
        assert_eq!(
            err("[queue]\n\nmax_log_file_bytes = 100\n"),
            "/ws/config.toml:3: queue.max_log_file_bytes: must be a whole number from 1024 to 1099511627776, found 100"
        );
        assert!(
            err("[queue]\nmax_log_file_bytes = '1M'\n")
                .contains(":2: queue.max_log_file_bytes: expected a whole number, found string")
        );
        assert!(
            err("[queue]\nmax_log_files_bytes = 4096\n")
                .contains(":2: queue.max_log_files_bytes: unknown key, did you mean queue.max_log_file_bytes?")
        );
    }

    #[test]
    fn syntax_errors_have_a_line() {
        let e = err("[hooks]\nafter_merge = [\n");
        assert!(e.starts_with("/ws/config.toml:"), "{e}");
        let e = err("[hooks]\nafter_merge = []\nafter_merge = []\n");
        assert_eq!(e, "/ws/config.toml:3: hooks.after_merge: duplicate key");
        let e = err(
            "[gate]\nkill_grace_secs = 1 # [x]\n[[y]]\n[queue] # q\nkeep_history_days = 1\nkeep_history_days = 2\n",
        );
        assert_eq!(
            e,
            "/ws/config.toml:6: queue.keep_history_days: duplicate key"
        );
        let e = err("a = 1\na = 2\n");
        assert_eq!(e, "/ws/config.toml:2: a: duplicate key");
    }

    #[test]
    fn non_utf8_names_the_line() {
        let e =
            Config::parse(Path::new("c.toml"), b"[hooks]\nafter_merge = ['\xff']\n").unwrap_err();
        assert_eq!(e.to_string(), "c.toml:2: not valid UTF-8 (byte 24)");
    }

    #[test]
    fn a_table_a_typo_away_from_hookqs_is_an_error() {
        for (text, line) in [
            (
                "[hook]\nafter_fail = ['x']\n",
                "/ws/config.toml:1: hook: unknown table, did you mean [hooks]?",
            ),
            (
                "[gate]\n[Hooks]\nafter_fail = ['x']\n",
                "/ws/config.toml:2: Hooks: unknown table, did you mean [hooks]?",
            ),
            (
                "[hoks]\n",
                "/ws/config.toml:1: hoks: unknown table, did you mean [hooks]?",
            ),
            (
                "[hooks_]\n",
                "/ws/config.toml:1: hooks_: unknown table, did you mean [hooks]?",
            ),
            (
                "[queu]\n",
                "/ws/config.toml:1: queu: unknown table, did you mean [queue]?",
            ),
            (
                "[hoosk]\n",
                "/ws/config.toml:1: hoosk: unknown table, did you mean [hooks]?",
            ),
            (
                "[Queue]\n",
                "/ws/config.toml:1: Queue: unknown table, did you mean [queue]?",
            ),
        ] {
            let got = parse(text).map_err(|e| e.to_string()).err();
            assert_eq!(got.as_deref(), Some(line), "{text}");
        }
        // Tables further from hookq's are the arc runner's, and so may be names near the tables
        // hookq shares with it.
        for text in [
            "[gates]\n",
            "[integrations]\n",
            "[Repository]\n",
            "[agent]\n",
            "[hooks_extra]\n",
            "[arc.hooks]\nx = 1\n",
            "[stage]\n",
        ] {
            assert!(parse(text).is_ok(), "{text}");
        }
    }

    #[test]
    fn a_point_has_at_most_99_commands() {
        let lines =
            |n: usize| format!("[hooks]\nafter_fail = [{}]\n", vec!["'true'"; n].join(", "));
        assert_eq!(parse(&lines(99)).unwrap().hooks(Point::AfterFail).len(), 99);
        assert_eq!(
            err(&lines(100)),
            "/ws/config.toml:2: hooks.after_fail: 100 command lines; a point runs at most 99 (its logs are numbered 01 to 99)"
        );
    }

    #[test]
    fn a_key_is_shown_on_one_line() {
        let e = err("[hooks]\n\"after_fail\\nwarning: forged\" = []\n");
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(
            e.contains(r"hooks.after_fail\nwarning: forged: unknown key"),
            "{e}"
        );
    }

    #[test]
    fn a_shared_key_a_typo_away_from_hookqs_is_a_warning() {
        let c = parse(
            "[gate]\ncommands = ['x']\ncomand_timeout_secs = 10\n[repository]\nmain_brach = 'trunk'\nRemote = 'up'\n[integration]\ntarget_branchs = 'x'\n",
        )
        .unwrap();
        assert_eq!(c.gate, Config::default().gate);
        let lines: Vec<String> = c.warnings().iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "/ws/config.toml:3: gate.comand_timeout_secs: not a key hookq reads; did you mean gate.command_timeout_secs?",
                "/ws/config.toml:5: repository.main_brach: not a key hookq reads; did you mean repository.main_branch?",
                "/ws/config.toml:6: repository.Remote: not a key hookq reads; did you mean repository.remote?",
                "/ws/config.toml:8: integration.target_branchs: not a key hookq reads; did you mean integration.target_branch?",
            ]
        );
        // arc's own keys, further from hookq's, stay quiet.
        let c = parse("[gate]\ncommands = ['x']\ntimeout_secs = 3\n[repository]\nname = 'r'\n[agent]\nmain_brach = 1\n").unwrap();
        assert!(c.warnings().is_empty(), "{:?}", c.warnings());
    }

    #[test]
    fn unknown_keys_in_shared_tables_are_left_alone() {
        let c = parse("[gate]\ncommands = ['cargo test']\n[agent]\nmodel = 'x'\n").unwrap();
        assert_eq!(c.gate, Config::default().gate);
    }
}
