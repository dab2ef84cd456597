//! What every model's error shares: the exit code a command ends with and a line of advice.
//! Each model has its own error type ([`crate::queue::Error`], [`crate::agent::Error`],
//! [`crate::lifecycle::Error`]); the CLI only dispatches to this trait.

/// Exit codes, as `docs/exit-codes.md` documents them.
pub mod code {
    /// Success (also when hooks failed: hooks never fail the command that ran them).
    pub const OK: u8 = 0;
    /// An I/O or internal failure not listed below.
    pub const FAILURE: u8 = 1;
    /// Bad usage: unknown flag, invalid id, phase or sha, a task that exists already.
    pub const USAGE: u8 = 2;
    /// `config.toml` is missing or invalid.
    pub const CONFIG: u8 = 3;
    /// Not found: no workspace, no such task, queue entry or history row.
    pub const NOT_FOUND: u8 = 4;
    /// The database is locked beyond `busy_timeout`, corrupt, newer than this hookq, read-only
    /// or on a full disk.
    pub const DATABASE: u8 = 5;
    /// `run --wait` ran out before the runner lock was free; another `hookq worktree`
    /// command held the workspace's lifecycle lock until the wait for it ran out.
    pub const LOCKED: u8 = 6;
    /// A worktree lifecycle hook failed or timed out, or a stop ended the command: a create
    /// was rolled back, a remove aborted or finished with failures.
    pub const HOOK_FAILED: u8 = 7;
    /// A git step of a worktree command failed (a create rolled back; a worktree not removed).
    pub const GIT_FAILED: u8 = 8;
    /// A worktree command was refused before any change: an inline/file ambiguity, no Bash, a
    /// hook that is not a file, a path that exists, a branch checked out elsewhere.
    pub const PREFLIGHT: u8 = 9;
}

/// A model's failure as a command reports it: `error: <Display>`, then `hint: <hint>` where one
/// helps, and the process ends with [`Failure::exit_code`].
pub trait Failure: std::error::Error {
    /// The exit code, one of [`code`].
    fn exit_code(&self) -> u8;

    /// A line of advice for the user, where one helps.
    fn hint(&self) -> Option<String> {
        None
    }

    /// Lines printed as they are between the `error:` line and the hint (each problem of a
    /// refused plan after the first).
    fn more(&self) -> Vec<String> {
        Vec::new()
    }
}
