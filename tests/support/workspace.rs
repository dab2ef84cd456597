//! A scratch folder for one test: the workspace root and a home of its own inside it, removed at
//! the end, and commands started there with a pinned environment. Most are temp dirs of random
//! names; the one whose pages docs/ui.md shows has a fixed name that reads well.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A temp dir `<base>` holding the workspace root `<base>/ws` and `<base>/home`, the `$HOME` of
/// every process the test starts; the rest of `<base>` is scratch space outside the workspace.
/// Every path is canonical, as the binary sees its working directory.
pub struct Scratch {
    _dir: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
    home: PathBuf,
    // Last, so that it is let go once the folder is gone.
    _held: Option<std::fs::File>,
}

/// The folder under the system temp dir that [`Scratch::readable`] makes.
pub const READABLE: &str = "hookq-demo";

/// The file that marks a [`READABLE`] folder as a scratch's, which a later run may remove.
const MARK: &str = ".hookq-scratch";

impl Default for Scratch {
    fn default() -> Self {
        Self::new()
    }
}

impl Scratch {
    /// A fresh temp dir with an empty root and home.
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("hookq-it-")
            .tempdir()
            .unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("ws");
        let home = base.join("home");
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(&home).unwrap();
        Self {
            _dir: dir,
            base,
            root,
            home,
            _held: None,
        }
    }

    /// A scratch at a fixed path whose names read well where a page shows them (the web
    /// view's screenshots in docs/ui.md show the queue's path): `<temp>/hookq-demo`, with the
    /// workspace root `<temp>/hookq-demo/<root>`. One test at a time on the machine has it: it
    /// waits for a lock beside the folder, then removes what a killed run left there (never a
    /// folder that is not a scratch's), and the folder is removed at the end like any scratch.
    pub fn readable(root: &str) -> Self {
        use std::time::Duration;
        let temp = std::env::temp_dir().canonicalize().unwrap();
        let lock_path = temp.join(format!("{READABLE}.lock"));
        let held = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&lock_path)
            .unwrap_or_else(|e| panic!("{}: {e}", lock_path.display()));
        // Longer than one hang bound: every test of every run on the machine that wants this
        // folder queues for it, and each holds it for its whole run.
        let queued = super::HANG * 3;
        let got = super::within(
            queued,
            Duration::from_millis(50),
            || match rustix::fs::flock(&held, rustix::fs::FlockOperation::NonBlockingLockExclusive)
            {
                Ok(()) => Some(()),
                Err(rustix::io::Errno::WOULDBLOCK) => None,
                Err(e) => panic!("{}: {e}", lock_path.display()),
            },
        );
        assert!(
            got.is_some(),
            "{} still locked after {queued:?}",
            lock_path.display()
        );
        let base = temp.join(READABLE);
        if base.exists() {
            assert!(
                base.join(MARK).exists(),
                "{} is in the way and is not a test's scratch: remove it",
                base.display()
            );
            std::fs::remove_dir_all(&base).unwrap();
        }
        let dir = tempfile::Builder::new()
            .prefix(READABLE)
            .rand_bytes(0)
            .tempdir_in(&temp)
            .unwrap();
        std::fs::write(base.join(MARK), "").unwrap();
        let (root, home) = (base.join(root), base.join("home"));
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(&home).unwrap();
        Self {
            _dir: dir,
            base,
            root,
            home,
            _held: Some(held),
        }
    }

    /// The temp dir itself: scratch space outside the workspace.
    pub fn path(&self) -> &Path {
        &self.base
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The home directory.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// `program` run in `dir` with nothing of the test's environment but `PATH`: `HOME` is this
    /// scratch's home and `LANG` is `C`. Callers add what their model needs.
    pub fn command(&self, program: impl AsRef<OsStr>, dir: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            )
            .env("HOME", &self.home)
            .env("LANG", "C")
            .current_dir(dir);
        cmd
    }
}
