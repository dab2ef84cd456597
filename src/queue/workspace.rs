//! The workspace: a repository root holding `.radian/arc/`.

use std::path::{Path, PathBuf};

use crate::queue::ids::TaskId;
use crate::queue::phase::Point;

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
    /// The directory to start from does not exist or cannot be resolved.
    #[error("cannot use {} as the directory to start from: {source}", path.display())]
    Start {
        /// The directory as given.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
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

    /// Finds the workspace like git finds `.git`: from `start` upward, through the directories
    /// that really hold it (`start` with symlinks and `..` resolved, as `git -C` does). A task's
    /// worktree (`.radian/arc/worktrees/<task>`) is a checkout of the repository: where the
    /// repository tracks `.radian/arc/config.toml`, the checkout has a `.radian/arc` of its own,
    /// which is passed over for the workspace that holds the worktree.
    pub fn discover(start: &Path) -> Result<Self, NotFound> {
        let not_start = |source| NotFound::Start {
            path: start.to_path_buf(),
            source,
        };
        let start = std::fs::canonicalize(start).map_err(not_start)?;
        if !start.is_dir() {
            return Err(not_start(std::io::ErrorKind::NotADirectory.into()));
        }
        let worktrees = Path::new(STATE_DIR).join("worktrees");
        for dir in start.ancestors() {
            if dir.ancestors().skip(1).any(|a| a.ends_with(&worktrees)) {
                continue;
            }
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

    #[test]
    fn discovers_through_the_real_directories_as_git_does() {
        let base = tempfile::tempdir().unwrap();
        let base = base.path().canonicalize().unwrap();
        let ws = base.join("ws");
        std::fs::create_dir_all(ws.join(".radian/arc")).unwrap();
        std::fs::create_dir_all(base.join("other/sub")).unwrap();
        // `..` is resolved first: ws/../other is not inside ws.
        let err = Workspace::discover(&ws.join("../other")).unwrap_err();
        assert!(matches!(err, NotFound::Missing { .. }), "{err}");
        // A directory that does not exist is not searched from its would-be parents.
        let err = Workspace::discover(&ws.join("no/such/dir")).unwrap_err();
        assert!(matches!(err, NotFound::Start { .. }), "{err}");
        // Nor is a file.
        std::fs::write(ws.join("afile"), "").unwrap();
        let err = Workspace::discover(&ws.join("afile")).unwrap_err();
        assert!(err.to_string().ends_with("not a directory"), "{err}");
        // A symlink leads where it points, in both directions.
        std::os::unix::fs::symlink(base.join("other"), ws.join("ext")).unwrap();
        let err = Workspace::discover(&ws.join("ext")).unwrap_err();
        assert!(matches!(err, NotFound::Missing { .. }), "{err}");
        std::os::unix::fs::symlink(ws.join(".radian"), base.join("other/sub/lnk")).unwrap();
        assert_eq!(
            Workspace::discover(&base.join("other/sub/lnk/arc"))
                .unwrap()
                .root(),
            ws
        );
    }

    #[test]
    fn a_worktrees_own_state_dir_is_passed_over() {
        // The repository tracks .radian/arc/config.toml, so the task's checkout has one too.
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        let tree = root.join(".radian/arc/worktrees/t1");
        std::fs::create_dir_all(tree.join(".radian/arc")).unwrap();
        std::fs::create_dir_all(tree.join("src")).unwrap();
        for start in [tree.clone(), tree.join("src"), tree.join(".radian/arc")] {
            assert_eq!(Workspace::discover(&start).unwrap().root(), root);
        }
    }
}
