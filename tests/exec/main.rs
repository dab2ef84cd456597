//! The executor on its own, in a binary of its own: a test here makes this process a child
//! subreaper, which every other test in the same process would feel.

mod gate;
mod timeout_zombies;
