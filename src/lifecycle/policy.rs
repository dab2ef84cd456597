//! What a failed hook does to the hooks and steps after it, said once as a type: create and
//! pre-remove stop at the first failure; post-remove runs every hook whatever happened.

/// The failure policy of a lifecycle phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailurePolicy {
    /// The first failure ends the phase: the rest is skipped and (create) rolled back.
    FailFast,
    /// Every hook runs; failures are collected and the command exits non-zero at the end.
    Continue,
}

impl FailurePolicy {
    /// Whether the phase stops after a failure.
    pub fn stops(self) -> bool {
        self == FailurePolicy::FailFast
    }
}
