//! Re-reading `config.toml` while a drain or a hub runs: a file edited between recording and
//! running applies, and a half-written one is never trusted.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::parse::{Config, ConfigError, read_bounded};

/// How long `config.toml` must have been unmodified before the drain trusts what it reads.
pub const SETTLE: Duration = Duration::from_millis(300);
/// The longest the drain waits for a `config.toml` that keeps changing.
pub const SETTLE_LIMIT: Duration = Duration::from_secs(5);
/// How long `config.toml` must have gone unmodified before a pass clears a point without running
/// it (no commands for it, too many interrupted passes) or prunes history by it. A writer that
/// truncates the file and writes it again in several steps leaves, while it pauses, a file that
/// can parse as valid with keys missing; unlike running a point's commands, those decisions
/// cannot be undone by the next read, so they wait until no write happened for this long.
pub const QUIET: Duration = Duration::from_secs(5);
/// How old a file's change time must be before `stat` alone may vouch for its contents: longer
/// than the coarsest time stamps a file system keeps (FAT's two seconds), so a later write cannot
/// leave the times as they were.
const STAT_TRUST_AGE: Duration = Duration::from_secs(3);

/// Re-reads `config.toml` each time it is asked, and re-parses it only when its bytes changed.
///
/// The drain asks before every point, so a config edited between recording and running applies.
/// While `stat` shows the same file, unchanged for a while, the config read last is used without
/// reading the file again.
#[derive(Debug)]
pub struct ConfigSource {
    path: PathBuf,
    last: Option<(Vec<u8>, Arc<Config>)>,
    /// The file version `last` was read from, when `stat` can vouch for it.
    trusted: Option<FileVersion>,
    /// The file version `last` was read from, when it did not change while it was read.
    read: Option<FileVersion>,
}

impl ConfigSource {
    /// A source reading `path`.
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            last: None,
            trusted: None,
            read: None,
        }
    }

    /// The file this source reads.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The configuration as the file says now. A missing file is an error: `hookq init` writes one.
    ///
    /// A file being rewritten in place can be read half-written, and a half-written config can
    /// parse as valid with a point's commands missing, which would clear points without running
    /// them. So a read that differs from the last one trusted is confirmed by a second read
    /// [`SETTLE`] later (and again, up to [`SETTLE_LIMIT`], while it keeps changing). The first
    /// read in a process is trusted at once when the file was last changed longer than
    /// [`SETTLE`] ago and did not change while it was read.
    ///
    /// When `stat` shows the very version read last (same file, length, modification and change
    /// times) and that version was already older than any file system's time stamp granularity
    /// when it was read, the file is not read again: any write since would have changed its
    /// change time.
    pub fn current(&mut self) -> Result<Arc<Config>, ConfigError> {
        let version = FileVersion::of(&self.path);
        if let (Some(v), Some(t), Some((_, cfg))) = (version, self.trusted, &self.last)
            && v == t
        {
            return Ok(Arc::clone(cfg));
        }
        self.trusted = None;
        self.read = None;
        let bytes = self.read_settled(version)?;
        let cfg = match &self.last {
            Some((old, cfg)) if *old == bytes => Arc::clone(cfg),
            _ => {
                let cfg = Arc::new(Config::parse(&self.path, &bytes)?);
                self.last = Some((bytes, Arc::clone(&cfg)));
                cfg
            }
        };
        let after = FileVersion::of(&self.path);
        self.read = version.filter(|v| Some(*v) == after);
        // Vouch for this version only if it is old enough and did not change around the read.
        self.trusted = self.read.filter(|v| v.age() >= STAT_TRUST_AGE);
        Ok(cfg)
    }

    /// How much longer the config read last must stay unmodified before a pass may clear a
    /// point without running it; `None` once the file has gone [`QUIET`] without a write since
    /// it was read. A file that changed since it was read, or while it was read, is a full
    /// [`QUIET`] away: its next read decides.
    ///
    /// Only the modification time counts: every write and truncation sets it, while a file
    /// written whole elsewhere and renamed into place keeps the time its writing ended.
    pub fn unsettled(&self) -> Option<Duration> {
        let Some(read) = self.read.filter(|r| FileVersion::of(&self.path) == Some(*r)) else {
            return Some(QUIET);
        };
        QUIET.checked_sub(read.unmodified_for()).filter(|d| !d.is_zero())
    }

    /// Reads the file, whose version was `before` just now.
    fn read_settled(&self, before: Option<FileVersion>) -> Result<Vec<u8>, ConfigError> {
        let deadline = Instant::now() + SETTLE_LIMIT;
        let mut bytes = read_bounded(&self.path)?;
        match &self.last {
            Some((old, _)) if *old == bytes => return Ok(bytes),
            None if before.is_some_and(|v| v.age() >= SETTLE)
                && FileVersion::of(&self.path) == before =>
            {
                return Ok(bytes);
            }
            _ => {}
        }
        while Instant::now() < deadline {
            std::thread::sleep(SETTLE);
            let again = read_bounded(&self.path)?;
            if again == bytes {
                break;
            }
            bytes = again;
        }
        Ok(bytes)
    }
}

/// A version of a file as far as `stat` can tell: which file (device and inode), its length,
/// and its modification and change times. The hub compares versions to notice an edited
/// `config.toml`; the drain uses them to skip re-reading an unchanged one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileVersion {
    dev: u64,
    ino: u64,
    len: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl FileVersion {
    /// The version of the file at `path` now; `None` when it cannot be read (the read that
    /// follows reports why).
    pub fn of(path: &Path) -> Option<Self> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        Some(Self {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            modified: (m.mtime(), m.mtime_nsec()),
            changed: (m.ctime(), m.ctime_nsec()),
        })
    }

    /// How long ago the file was last modified or changed (a time in the future counts as long
    /// ago).
    fn age(&self) -> Duration {
        since(self.modified.max(self.changed)).unwrap_or(Duration::MAX)
    }

    /// How long ago the file's contents were last written. A time in the future is a clock
    /// that was stepped back, or a file server's clock ahead of this one: up to a minute ahead
    /// it counts as just now, further ahead as long ago (a wrong clock must not keep points
    /// pending for good).
    fn unmodified_for(&self) -> Duration {
        match since(self.modified) {
            Ok(age) => age,
            Err(ahead) if ahead <= Duration::from_secs(60) => Duration::ZERO,
            Err(_) => Duration::MAX,
        }
    }
}

/// How long ago the file time `(secs, nanos)` was; `Err` with how far ahead it is when it is in
/// the future.
fn since(time: (i64, i64)) -> Result<Duration, Duration> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let then = Duration::new(
        u64::try_from(time.0).unwrap_or(0),
        u32::try_from(time.1).unwrap_or(0),
    );
    now.checked_sub(then).ok_or_else(|| then - now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::phase::Point;

    #[test]
    fn a_config_is_settled_once_its_file_went_quiet_without_a_write_since_it_was_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let mut source = ConfigSource::new(path.clone());
        assert_eq!(source.unsettled(), Some(QUIET), "nothing read yet");
        std::fs::write(&path, "[hooks]\n").unwrap();
        source.current().unwrap();
        let wait = source.unsettled().expect("written just now");
        assert!(wait > QUIET - Duration::from_secs(2) && wait <= QUIET, "{wait:?}");
        let backdate = |secs| {
            let f = std::fs::File::options().write(true).open(&path).unwrap();
            f.set_modified(std::time::SystemTime::now() - Duration::from_secs(secs))
                .unwrap();
        };
        backdate(60);
        assert_eq!(source.unsettled(), Some(QUIET), "changed since it was read");
        source.current().unwrap();
        assert_eq!(source.unsettled(), None);
        // A modification time a little ahead of the clock is a write just now.
        let f = std::fs::File::options().write(true).open(&path).unwrap();
        f.set_modified(std::time::SystemTime::now() + Duration::from_secs(30))
            .unwrap();
        source.current().unwrap();
        assert_eq!(source.unsettled(), Some(QUIET));
    }

    #[test]
    fn a_source_sees_an_in_place_edit_of_a_file_it_trusted_by_stat() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "[hooks]\nafter_merge = ['echo a']\n").unwrap();
        std::thread::sleep(STAT_TRUST_AGE + Duration::from_millis(100));
        let mut source = ConfigSource::new(path.clone());
        let merge = |s: &mut ConfigSource| s.current().unwrap().hooks(Point::AfterMerge).to_vec();
        assert_eq!(merge(&mut source), ["echo a"]);
        assert!(
            source.trusted.is_some(),
            "an old, unchanged file is vouched for by stat"
        );
        assert_eq!(merge(&mut source), ["echo a"]);
        // Same length, same inode, written in place: only the times differ.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|mut f| {
                std::io::Write::write_all(&mut f, b"[hooks]\nafter_merge = ['echo b']\n")
            })
            .unwrap();
        assert_eq!(merge(&mut source), ["echo b"]);
        assert!(
            source.trusted.is_none(),
            "a file changed just now is read every time"
        );
    }
}
