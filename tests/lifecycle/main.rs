//! Worktree lifecycle hooks against real git repositories through the real binary.

// Each binary uses a different part of the shared helpers.
#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;

mod lifecycle_crash;
mod lifecycle_create;
mod lifecycle_discovery;
mod lifecycle_forget;
mod lifecycle_ledger;
mod lifecycle_pick;
mod lifecycle_remove;
mod lifecycle_tty;
