//! The workspace: a repository root holding `.radian/arc/` (SPEC §1).

use std::path::{Path, PathBuf};

use crate::ids::TaskId;
use crate::phase::Point;

/// The state dir's path below the workspace root.
pub const STATE_DIR: &str = ".radian/arc";

/// No usable workspace was found.
#[derive(Debug, thiserror::Error)]
pub enum NotFound {
    /// No directory on the way up holds `.radian/arc`.
    #[error("no hookq workspace (a `.radian/arc` directory) in {} or any parent", start.display())]
    Missing {
        /// Where the search started.
        start: PathBuf,
    },
    /// A `.radian/arc` exists on the way up but cannot be looked at.
    #[error("cannot access {}: {source}", path.display())]
    Access {
        /// The state dir.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// A workspace root and the places inside its state dir.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    state: PathBuf,
}

impl Workspace {
    /// The workspace rooted at `root` (absolute, as given; not checked for existence).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        let state = root.join(STATE_DIR);
        Self { root, state }
    }

    /// Finds the workspace like git finds `.git`: from `start` upward.
    pub fn discover(start: &Path) -> Result<Self, NotFound> {
        let start = std::path::absolute(start).unwrap_or_else(|_| start.to_path_buf());
        for dir in start.ancestors() {
            let state = dir.join(STATE_DIR);
            match std::fs::metadata(&state) {
                Ok(m) if m.is_dir() => return Ok(Self::at(dir)),
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                    return Err(NotFound::Access {
                        path: state,
                        source: e,
                    });
                }
                Err(_) => {}
            }
        }
        Err(NotFound::Missing { start })
    }

    /// The repository root; hook commands run here.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<root>/.radian/arc`.
    pub fn state_dir(&self) -> &Path {
        &self.state
    }

    /// `config.toml`.
    pub fn config_path(&self) -> PathBuf {
        self.state.join("config.toml")
    }

    /// `arc.db`.
    pub fn db_path(&self) -> PathBuf {
        self.state.join("arc.db")
    }

    /// `runner.lock`.
    pub fn lock_path(&self) -> PathBuf {
        self.state.join("runner.lock")
    }

    /// `runs/<task>/hooks`.
    pub fn hook_log_dir(&self, task: &TaskId) -> PathBuf {
        self.state.join("runs").join(task.as_str()).join("hooks")
    }

    /// `runs/<task>/hooks/<point>-NN.log`, `index` 1-based.
    pub fn hook_log_path(&self, task: &TaskId, point: Point, index: usize) -> PathBuf {
        self.hook_log_dir(task)
            .join(format!("{}-{index:02}.log", point.as_str()))
    }

    /// `worktrees/<task>`, absolute when the root is.
    pub fn worktree(&self, task: &TaskId) -> PathBuf {
        self.state.join("worktrees").join(task.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        let ws = Workspace::at("/r");
        let t = TaskId::new("t1").unwrap();
        assert_eq!(ws.db_path(), Path::new("/r/.radian/arc/arc.db"));
        assert_eq!(
            ws.hook_log_path(&t, Point::AfterMerge, 1),
            Path::new("/r/.radian/arc/runs/t1/hooks/after_merge-01.log")
        );
        assert_eq!(ws.worktree(&t), Path::new("/r/.radian/arc/worktrees/t1"));
    }

    #[test]
    fn discovers_upward() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".radian/arc")).unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        let ws = Workspace::discover(&dir.path().join("a/b")).unwrap();
        assert_eq!(ws.root(), dir.path());
        let none = tempfile::tempdir().unwrap();
        assert!(Workspace::discover(none.path()).is_err());
    }
}
