//! The kernel's word that a SQLite queue may have changed: an inotify watch on the database's
//! folder, so that a watcher ([`crate::queue::watch`]) reads the queue's mark when one of its
//! files is written rather than over and over.
//!
//! A commit writes the database's `-wal` file (or, out of WAL mode, the database itself); a
//! runner notes a point's start in the start log. A write to any of the three wakes the waiter,
//! which then reads the mark as it would have on a poll: the read, not the wake, says whether
//! the queue changed (a checkpoint writes the database and changes nothing). Writes to the
//! folder's other files (`config.toml`, the runner lock, the logs' folders) are read off the
//! watch and dropped.
//!
//! A wait is cut into slices of [`SLICE`] so that a stop is seen within one: a stop request is
//! a flag, which nothing can wait on (a signal that stops the process ends the slice of the
//! thread it lands on at once). A slice is long because each wake-up costs: with a hundred
//! queues in one hub, one wake-up a second each is about 1.5 % of a core on a small VM.

use std::ffi::{OsStr, OsString};
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use rustix::io::Errno;

use crate::queue::watch::Pause;

/// The longest one wait on the watch lasts before the waiter looks at its stop request.
pub const SLICE: Duration = Duration::from_millis(1000);

/// An inotify watch on the folder of a SQLite queue, telling of writes to its files.
pub(crate) struct Wake {
    fd: OwnedFd,
    /// The names, in the folder, of the files whose writes wake.
    names: Vec<OsString>,
}

impl std::fmt::Debug for Wake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wake")
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

/// Why a watch stopped telling: the folder went away, or reading the watch failed. The waiter
/// polls from then on.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WakeError {
    /// The kernel refused the watch (too many inotify instances or watches: the
    /// `fs.inotify.max_user_instances` and `max_user_watches` limits), or the folder is missing.
    #[error("cannot watch {folder} for writes: {source}")]
    Setup {
        /// The folder.
        folder: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The watch ended (its folder was removed or unmounted), or could not be read.
    #[error("the watch of the queue's folder ended: {0}")]
    Ended(#[source] std::io::Error),
}

impl Wake {
    /// Watches the folder of `db` for writes to `db`, its `-wal` file and the start log
    /// `starts` (a file of the same folder).
    pub(crate) fn new(db: &Path, starts: &Path) -> Result<Wake, WakeError> {
        let folder = match db.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let setup = |source: Errno| WakeError::Setup {
            folder: folder.display().to_string(),
            source: source.into(),
        };
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).map_err(setup)?;
        inotify::add_watch(
            &fd,
            folder,
            WatchFlags::MODIFY
                | WatchFlags::CLOSE_WRITE
                | WatchFlags::CREATE
                | WatchFlags::MOVED_TO
                | WatchFlags::ONLYDIR,
        )
        .map_err(setup)?;
        let name = |p: &Path| p.file_name().map(OsStr::to_os_string);
        let mut wal = db.as_os_str().to_owned();
        wal.push("-wal");
        let names = [name(db), name(Path::new(&wal)), name(starts)]
            .into_iter()
            .flatten()
            .collect();
        Ok(Wake { fd, names })
    }

    /// Takes every write told so far, without waiting: whether one was to the queue's files.
    /// An overflow of the kernel's queue of events counts as one, since it may have hidden one.
    pub(crate) fn take(&mut self) -> Result<bool, WakeError> {
        let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
        let mut reader = inotify::Reader::new(&self.fd, &mut buf);
        let mut woken = false;
        loop {
            let event = match reader.next() {
                Ok(event) => event,
                Err(Errno::AGAIN) => return Ok(woken),
                Err(Errno::INTR) => continue,
                Err(e) => return Err(WakeError::Ended(e.into())),
            };
            let flags = event.events();
            if flags.contains(ReadFlags::IGNORED) || flags.contains(ReadFlags::UNMOUNT) {
                return Err(WakeError::Ended(std::io::Error::other(
                    "the folder was removed or unmounted",
                )));
            }
            woken |= flags.contains(ReadFlags::QUEUE_OVERFLOW)
                || event.file_name().is_some_and(|n| {
                    let n = OsStr::from_bytes(n.to_bytes());
                    self.names.iter().any(|ours| ours == n)
                });
        }
    }

    /// Waits up to `timeout` for a write to the queue's files, taking every write told
    /// meanwhile, or less when `pause` stops: whether one came.
    pub(crate) fn wait(&mut self, pause: &dyn Pause, timeout: Duration) -> Result<bool, WakeError> {
        let until = Instant::now() + timeout;
        loop {
            if self.take()? {
                return Ok(true);
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() || pause.stopped() {
                return Ok(false);
            }
            let slice = left.min(SLICE);
            let ts = Timespec {
                tv_sec: slice.as_secs() as i64,
                tv_nsec: i64::from(slice.subsec_nanos()),
            };
            let mut fds = [PollFd::new(&self.fd, PollFlags::IN)];
            match poll(&mut fds, Some(&ts)) {
                Ok(_) | Err(Errno::INTR) => {}
                Err(e) => return Err(WakeError::Ended(e.into())),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clock that never stops.
    struct Never;

    impl Pause for Never {
        fn sleep(&self, d: Duration) {
            std::thread::sleep(d);
        }
        fn stopped(&self) -> bool {
            false
        }
    }

    #[test]
    fn a_write_to_the_queues_files_wakes_and_one_to_another_file_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("arc.db");
        let starts = dir.path().join("arc.db-starts");
        let mut wake = Wake::new(&db, &starts).unwrap();
        assert!(!wake.take().unwrap(), "nothing written yet");
        std::fs::write(dir.path().join("config.toml"), "x").unwrap();
        assert!(!wake.take().unwrap(), "another file of the folder");
        std::fs::write(dir.path().join("arc.db-wal"), "x").unwrap();
        assert!(wake.take().unwrap(), "the database's WAL");
        assert!(!wake.take().unwrap(), "taken once");
        std::fs::write(&starts, "1 2\n").unwrap();
        assert!(wake.wait(&Never, Duration::from_secs(60)).unwrap(), "the start log");
    }

    #[test]
    fn a_removed_folder_ends_the_watch() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("state");
        std::fs::create_dir(&sub).unwrap();
        let mut wake = Wake::new(&sub.join("arc.db"), &sub.join("arc.db-starts")).unwrap();
        std::fs::remove_dir(&sub).unwrap();
        // The bound only catches a hang: the kernel tells of the end as the folder goes.
        let hang = Instant::now() + Duration::from_secs(60);
        loop {
            match wake.wait(&Never, Duration::from_secs(1)) {
                Err(WakeError::Ended(_)) => break,
                other => assert!(Instant::now() < hang, "the watch did not end: {other:?}"),
            }
        }
    }
}
