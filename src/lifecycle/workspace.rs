//! Where a `hookq worktree` command works: a configured workspace (the nearest directory upward
//! holding `.arashi/config.json`) or, with no config, the git repository the command starts in
//! (standalone). Each has its own layout for new worktrees and its own state folder.

use std::path::{Path, PathBuf};

use super::config::{CONFIG_FILE, Config, ConfigError};
use super::git::{self, GitError};
use super::point::ModeKind;

/// The folder, inside the workspace's own state, where hookq keeps its lock and journal.
pub const STATE_DIR_NAME: &str = "hookq-worktree";

/// How the workspace was found.
#[derive(Debug, Clone)]
#[allow(
    clippy::large_enum_variant,
    reason = "one per command, never in a collection: boxing the config buys nothing"
)]
pub enum Mode {
    /// `.arashi/config.json` at the root.
    Configured(Config),
    /// No config: one repository, its main worktree's root.
    Standalone {
        /// The main root's basename: the repository's name for targeted user-global hooks.
        name: String,
    },
}

/// One repository a command can act on.
#[derive(Debug, Clone)]
pub struct RepoRef {
    /// Its name: the config key, or the standalone main root's basename.
    pub name: String,
    /// Its source checkout (configured) or main root (standalone).
    pub checkout: PathBuf,
}

/// Where a lifecycle command works.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// Configured or standalone.
    pub mode: Mode,
    /// The canonical workspace root (configured) or main root (standalone).
    pub root: PathBuf,
    /// Where hookq keeps its lock and journal: `<root>/.arashi/hookq-worktree` (configured),
    /// `<git common dir>/hookq-worktree` (standalone).
    pub state_dir: PathBuf,
    /// The user's home, for `~/.arashi/hooks`; `None` when `HOME` is unset or not absolute
    /// (then no user-global hook is looked for).
    pub home: Option<PathBuf>,
}

/// Why no workspace could be used.
#[derive(Debug, thiserror::Error)]
pub enum FindError {
    /// The start directory cannot be used (missing, or not readable).
    #[error("cannot use {} as the directory to start from: {source}", path.display())]
    Start {
        /// The start directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// No config upward and not inside a git repository.
    #[error("no {CONFIG_FILE} in {} or above, and it is not inside a git work tree", start.display())]
    Missing {
        /// The start directory.
        start: PathBuf,
    },
    /// The config is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Git could not tell where the repository is.
    #[error(transparent)]
    Git(#[from] GitError),
    /// The repository has no main worktree (bare).
    #[error("{} is in a bare repository: standalone mode needs a main worktree", start.display())]
    Bare {
        /// The start directory.
        start: PathBuf,
    },
}

impl FindError {
    /// Whether the start directory does not exist: nothing to act on, as a `-C DIR` that does
    /// not exist is for every hookq command.
    pub fn start_missing(&self) -> bool {
        matches!(self, FindError::Start { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

impl Workspace {
    /// Finds the workspace from `start` upward. `home` is the user's home directory.
    pub fn discover(start: &Path, home: Option<PathBuf>) -> Result<Workspace, FindError> {
        let start = start.canonicalize().map_err(|source| FindError::Start {
            path: start.to_path_buf(),
            source,
        })?;
        let home = home.filter(|h| h.is_absolute());
        for dir in start.ancestors() {
            if dir.join(CONFIG_FILE).is_file() {
                let config = Config::load(dir)?;
                return Ok(Workspace {
                    root: dir.to_path_buf(),
                    state_dir: dir.join(".arashi").join(STATE_DIR_NAME),
                    mode: Mode::Configured(config),
                    home,
                });
            }
        }
        let Some(dirs) = git::repo_dirs(&start)? else {
            return Err(FindError::Missing { start });
        };
        // The main worktree is the common git dir's parent when that is `<main>/.git`; a
        // separate git dir (a submodule's) asks git for its main worktree instead.
        let main = if dirs.common_dir.file_name().is_some_and(|n| n == ".git") {
            dirs.common_dir.parent().map(Path::to_path_buf)
        } else {
            git::worktrees(&dirs.toplevel)?
                .into_iter()
                .next()
                .filter(|w| !w.bare)
                .map(|w| w.path)
        };
        let Some(main) = main else {
            return Err(FindError::Bare { start });
        };
        let root = main.canonicalize().unwrap_or(main);
        let name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(Workspace {
            state_dir: dirs.common_dir.join(STATE_DIR_NAME),
            mode: Mode::Standalone { name },
            root,
            home,
        })
    }

    /// Configured or standalone.
    pub fn kind(&self) -> ModeKind {
        match self.mode {
            Mode::Configured(_) => ModeKind::Configured,
            Mode::Standalone { .. } => ModeKind::Standalone,
        }
    }

    /// The config, in configured mode.
    pub fn config(&self) -> Option<&Config> {
        match &self.mode {
            Mode::Configured(c) => Some(c),
            Mode::Standalone { .. } => None,
        }
    }

    /// Every repository, in config order (standalone: the one).
    pub fn repos(&self) -> Vec<RepoRef> {
        match &self.mode {
            Mode::Configured(c) => c
                .repos
                .iter()
                .map(|r| RepoRef {
                    name: r.name.clone(),
                    checkout: r.checkout.clone(),
                })
                .collect(),
            Mode::Standalone { name } => vec![RepoRef {
                name: name.clone(),
                checkout: self.root.clone(),
            }],
        }
    }

    /// Where repository `repo`'s worktree for `branch` goes: `<root>/worktrees/<repo>/<branch>`
    /// (configured), `<main root>/../<name>.worktrees/<branch>` (standalone).
    pub fn worktree_path(&self, repo: &str, branch: &str) -> PathBuf {
        match &self.mode {
            Mode::Configured(_) => self.root.join("worktrees").join(repo).join(branch),
            Mode::Standalone { name } => self
                .root
                .parent()
                .unwrap_or(&self.root)
                .join(format!("{name}.worktrees"))
                .join(branch),
        }
    }

    /// `~/.arashi/hooks`, when the home is known.
    pub fn user_hooks_dir(&self) -> Option<PathBuf> {
        self.home.as_ref().map(|h| h.join(".arashi").join("hooks"))
    }

    /// `<root>/.arashi/hooks` (configured only).
    pub fn workspace_hooks_dir(&self) -> PathBuf {
        self.root.join(".arashi").join("hooks")
    }
}
