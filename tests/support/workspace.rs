//! A scratch folder for one test: the workspace root and a home of its own inside it, removed at
//! the end, and commands started there with a pinned environment.

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
}

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
