//! The four lifecycle points and the four scopes a hook can come from, parsed once at the edge.

use std::fmt;

/// A lifecycle point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lifecycle {
    /// Before a worktree is made.
    PreCreate,
    /// After the worktrees were made.
    PostCreate,
    /// Before a worktree is removed.
    PreRemove,
    /// After the removals were attempted.
    PostRemove,
}

impl Lifecycle {
    /// All four, in the order the config and the docs list them.
    pub const ALL: [Lifecycle; 4] = [
        Lifecycle::PreCreate,
        Lifecycle::PostCreate,
        Lifecycle::PreRemove,
        Lifecycle::PostRemove,
    ];

    /// The config key and file name stem: `pre-create`, …
    pub fn as_str(self) -> &'static str {
        match self {
            Lifecycle::PreCreate => "pre-create",
            Lifecycle::PostCreate => "post-create",
            Lifecycle::PreRemove => "pre-remove",
            Lifecycle::PostRemove => "post-remove",
        }
    }

    /// The lifecycle named `s`.
    pub fn parse(s: &str) -> Option<Lifecycle> {
        Lifecycle::ALL.into_iter().find(|l| l.as_str() == s)
    }

    /// Its index in [`Lifecycle::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Lifecycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a hook is configured, as `ARASHI_HOOK_SCOPE` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// The workspace: `hooks.scripts.<lifecycle>` or `<root>/.arashi/hooks/<lifecycle>.sh`.
    Workspace,
    /// One repository: `repos.<name>.hooks.<lifecycle>`, `<root>/.arashi/hooks/<lc>.<name>.sh`
    /// (create) or `<checkout>/.arashi/hooks/<lc>.sh` (remove).
    Repository,
    /// The user's hooks for one repository: `~/.arashi/hooks/<name>/<lifecycle>.sh`.
    GlobalRepository,
    /// The user's hooks for every repository: `~/.arashi/hooks/<lifecycle>.sh`.
    GlobalShared,
}

impl Scope {
    /// The `ARASHI_HOOK_SCOPE` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Workspace => "workspace",
            Scope::Repository => "repository",
            Scope::GlobalRepository => "global-repository",
            Scope::GlobalShared => "global-shared",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the command found its workspace, as `ARASHI_HOOK_WORKSPACE_MODE` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModeKind {
    /// A `.arashi/config.json` was found.
    Configured,
    /// No config: one git repository and the user's global hooks.
    Standalone,
}

impl serde::Serialize for ModeKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl ModeKind {
    /// `configured` or `standalone`.
    pub fn as_str(self) -> &'static str {
        match self {
            ModeKind::Configured => "configured",
            ModeKind::Standalone => "standalone",
        }
    }
}
