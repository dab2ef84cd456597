//! What each lifecycle would run, by scope and source, without running or changing anything,
//! and every problem that would make a create or remove refuse before any change.

use std::path::PathBuf;
use std::time::Duration;

use super::discovery::{self, Listed, Problem};
use super::error::Error;
use super::plan;
use super::workspace::Workspace;

/// Every hook a workspace would run, in the order each command would run it.
#[derive(Debug, Clone)]
pub struct Inspection {
    /// Create hooks (for every repository), then remove hooks (for every repository); both
    /// candidates of an ambiguous location, marked.
    pub hooks: Vec<Listed>,
    /// What would refuse a command.
    pub problems: Vec<Problem>,
    /// The Bash the hooks would run with (`None`: no hooks, or none found).
    pub bash: Option<PathBuf>,
    /// Each hook's timeout.
    pub timeout: Duration,
}

/// Inspects `ws`: the checks a create and a remove make before any change, for every
/// repository and every hook location. A config a command would refuse as invalid is an
/// error, as it is for the command.
pub fn inspect(ws: &Workspace) -> Result<Inspection, Error> {
    plan::check_distinct(ws)?;
    // A config listing no repository: every create and remove refuses it.
    plan::select(ws, &[])?;
    let mut problems = Vec::new();
    if ws.config().is_some() {
        for r in ws.repos() {
            plan::checkout_of(ws, &r, &mut problems)?;
        }
    }
    let hooks = discovery::listing(ws, &mut problems);
    problems.dedup();
    let runs = || hooks.iter().filter(|l| !l.ambiguous).map(|l| &l.hook);
    let bash = plan::bash_for(ws, runs().next().is_some(), &mut problems);
    plan::check_snippets(bash.as_deref(), runs(), &mut problems);
    Ok(Inspection {
        hooks,
        problems,
        bash,
        timeout: plan::timeout(ws),
    })
}
