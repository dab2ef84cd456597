//! The durable hook queue through the real binary and the library: draining, rules, hubs,
//! errors and bad input, hostile hooks, crashes and concurrent writers, notifications, the WAL,
//! and property tests of what is parsed at the edge; and the queue on PostgreSQL (`postgres`),
//! against a throwaway cluster this binary starts itself; and the queue's behaviour written once
//! and run against both (`conformance`).

// Each binary uses a different part of the shared helpers.
#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;

mod bad_input;
mod cli_drain;
mod cli_errors;
mod cli_git;
mod cli_hub;
mod cli_logs;
mod cli_rules;
mod concurrency;
mod config_writes;
#[path = "../conformance/mod.rs"]
mod conformance;
mod crash;
mod fleet;
mod hostile;
mod hub_metrics;
mod notify;
#[cfg(feature = "postgres")]
#[path = "../postgres/mod.rs"]
mod postgres;
mod props;
mod wal_spill;
