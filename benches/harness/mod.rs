//! The hookq benchmark harness: measures the price of durability against this machine's physical
//! floors, measured in the same run, and reports ratios against targets.
//!
//! `benches/hookq.rs` runs it at full size (`cargo bench --bench hookq`); `tests/docs/bench_smoke.rs`
//! includes this module by path and runs it at smoke size, so CI compiles and runs every line.
//! See BENCHMARKS.md for what each figure measures.

pub mod agent;
pub mod compare;
pub mod drain;
pub mod fixture;
pub mod fleet;
pub mod floors;
pub mod hub;
pub mod lifecycle;
pub mod memory;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod proc;
pub mod report;
pub mod scale;
pub mod sizes;
pub mod stats;
pub mod suite;
pub mod transitions;
pub mod ui;

pub use sizes::Sizes;
pub use suite::run;
