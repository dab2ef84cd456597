//! The executor on its own, in a binary of its own: the test here makes this process a child
//! subreaper, which every other test in the same process would feel.

mod timeout_zombies;
