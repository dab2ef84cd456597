//! The executor on its own, in a binary of its own: a test here makes this process a child
//! subreaper, which every other test in the same process would feel.

mod gate;
// The one bounded wait; the rest of the shared helpers is for other binaries.
#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;
mod timeout_zombies;
