//! The sha a merge put on the target branch, read from the repository when the mover does not
//! give one: a move into `done.merged` without a sha reads the target branch's head as it
//! records, so that `after_merge` still gets `ARC_MERGED_SHA`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::queue::config::Config;
use crate::queue::workspace::Workspace;

/// Where a move into `done.merged` without a given sha reads it: the head of `branch` in the
/// repository at `repo`, as `git rev-parse` run there finds it.
///
/// Put one in [`MoveFacts::target_head`](crate::queue::record::MoveFacts::target_head) to have
/// the recording read it; built once ([`TargetHead::of`]) and cloned for each move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetHead {
    /// The directory git runs in: the workspace root, the repository arc merges into.
    pub repo: PathBuf,
    /// The branch merges target (`ARC_TARGET_BRANCH`).
    pub branch: String,
}

/// Why the target branch's head could not be read.
#[derive(Debug, thiserror::Error)]
pub enum HeadError {
    /// git could not be started.
    #[error("cannot run git in {}: {source}", repo.display())]
    Git {
        /// Where it was to run.
        repo: PathBuf,
        /// Why it did not start.
        #[source]
        source: std::io::Error,
    },
    /// git ran and said why it could not read the branch (no repository there, say).
    #[error("git rev-parse in {}: {message}", repo.display())]
    Failed {
        /// Where it ran.
        repo: PathBuf,
        /// git's own first line of complaint, or its exit status.
        message: String,
    },
    /// The repository has no such branch.
    #[error("no branch {branch} in the repository at {}", repo.display())]
    NoBranch {
        /// The branch asked for.
        branch: String,
        /// The repository.
        repo: PathBuf,
    },
}

impl TargetHead {
    /// The target branch of `cfg` (`integration.target_branch`, else
    /// `repository.main_branch`) in the repository at `ws`'s root.
    pub fn of(ws: &Workspace, cfg: &Config) -> Self {
        Self {
            repo: ws.root().to_path_buf(),
            branch: cfg.target_branch().to_owned(),
        }
    }

    /// The commit the branch's head names now, as 40 (or 64) hex digits.
    ///
    /// Runs `git rev-parse --verify --quiet refs/heads/<branch>^{commit}` in [`repo`](Self::repo)
    /// without git's repository overrides (`GIT_DIR` and the rest that `git rev-parse
    /// --local-env-vars` lists), so an override inherited from whoever runs hookq (a git hook,
    /// say) does not make it read another repository than the hooks would.
    pub fn read(&self) -> Result<String, HeadError> {
        read_head(&self.repo, &self.branch)
    }
}

/// [`TargetHead::read`]: the one place the queue runs git.
fn read_head(repo: &Path, branch: &str) -> Result<String, HeadError> {
    let mut cmd = Command::new("git");
    cmd.current_dir(repo)
        .args(["rev-parse", "--verify", "--quiet"])
        .arg(format!("refs/heads/{branch}^{{commit}}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, _) in std::env::vars_os() {
        if crate::exec::env::is_git_local(&name) {
            cmd.env_remove(name);
        }
    }
    let out = cmd.output().map_err(|source| HeadError::Git {
        repo: repo.to_path_buf(),
        source,
    })?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let sha = stdout.trim();
    if out.status.success() && crate::queue::model::Sha::new(sha).is_ok() {
        return Ok(sha.to_owned());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let complaint = stderr.lines().map(str::trim).find(|l| !l.is_empty());
    match complaint {
        // `--verify --quiet` fails silently, exit 1, for a name that is not a commit.
        None if out.status.code() == Some(1) => Err(HeadError::NoBranch {
            branch: branch.to_owned(),
            repo: repo.to_path_buf(),
        }),
        Some(line) => Err(HeadError::Failed {
            repo: repo.to_path_buf(),
            message: line.escape_debug().to_string(),
        }),
        None => Err(HeadError::Failed {
            repo: repo.to_path_buf(),
            message: format!("{}", out.status),
        }),
    }
}
