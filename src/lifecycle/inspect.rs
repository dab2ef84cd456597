//! What each lifecycle would run, by scope and source, without running or changing anything.

use std::path::PathBuf;
use std::time::Duration;

use super::discovery::{self, Problem, SourcedCommand};
use super::plan;
use super::point::Lifecycle;
use super::workspace::{Mode, Workspace};

/// Every hook a workspace would run, in the order each command would run it.
#[derive(Debug, Clone)]
pub struct Inspection {
    /// Create hooks (for every repository), then remove hooks (for every repository).
    pub hooks: Vec<SourcedCommand>,
    /// Locations that would refuse a command.
    pub problems: Vec<Problem>,
    /// The Bash the hooks would run with (`None`: no hooks, or none found).
    pub bash: Option<PathBuf>,
    /// Each hook's timeout.
    pub timeout: Duration,
}

/// Inspects `ws`.
pub fn inspect(ws: &Workspace) -> Inspection {
    let mut problems = Vec::new();
    let mut hooks = Vec::new();
    let repos = ws.repos();
    match &ws.mode {
        Mode::Configured(_) => {
            hooks.extend(discovery::configured_create(
                ws,
                Lifecycle::PreCreate,
                None,
                &mut problems,
            ));
            for r in &repos {
                for lc in [Lifecycle::PreCreate, Lifecycle::PostCreate] {
                    hooks.extend(discovery::configured_create(
                        ws,
                        lc,
                        Some(&r.name),
                        &mut problems,
                    ));
                }
            }
            hooks.extend(discovery::configured_create(
                ws,
                Lifecycle::PostCreate,
                None,
                &mut problems,
            ));
        }
        Mode::Standalone { .. } => {
            for lc in [Lifecycle::PreCreate, Lifecycle::PostCreate] {
                hooks.extend(discovery::standalone_create(ws, lc, &mut problems));
            }
        }
    }
    for lc in [Lifecycle::PreRemove, Lifecycle::PostRemove] {
        for r in &repos {
            hooks.extend(discovery::remove_hooks(
                ws,
                lc,
                &r.name,
                &r.checkout,
                &mut problems,
            ));
        }
    }
    problems.dedup();
    let bash = plan::bash_for(ws, !hooks.is_empty(), &mut problems);
    plan::check_snippets(bash.as_deref(), &hooks, &mut problems);
    Inspection {
        hooks,
        problems,
        bash,
        timeout: plan::timeout(ws),
    }
}
