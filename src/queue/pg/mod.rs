//! The queue on PostgreSQL: one queue shared by many hosts, many queues in one database.
//!
//! [`Target`] reads a connection string (libpq's URL or key/value form, TLS over rustls);
//! [`PgStore::open`] connects and creates or upgrades the schema; [`record`] writes transitions
//! and their points inside the host's own [`postgres::Transaction`], with the same rules as
//! the SQLite queue; [`PgRunnerLock`] is the one-runner-per-queue advisory lock; the functions
//! of [`store`] are the reads and the drain's writes; [`PgQueue`] puts them behind
//! [`QueueStore`](crate::queue::QueueStore), so the drain and the hub run on PostgreSQL.

pub mod choose;
pub mod connect;
pub mod driver;
pub mod error;
pub(crate) mod hub;
pub(crate) mod listener;
pub(crate) mod marks;
pub mod lock;
pub mod name;
pub(crate) mod prune;
pub mod notify;
pub mod queue;
pub mod record;
pub mod schema;
pub(crate) mod server;
pub(crate) mod session;
pub mod store;
pub mod target;
mod values;

/// The `postgres` crate whose [`Transaction`](postgres::Transaction) and
/// [`Client`](postgres::Client) the queue's calls take, so that a host uses the very version
/// hookq was built with, without naming it in its own `Cargo.toml`.
pub use postgres;

pub use choose::{ChosenBy, DATABASE_ENV, PgChoice, choose};
pub use connect::connect;
pub use driver::PostgresDriver;
pub use error::{ConnectFailure, PgError};
pub use lock::{Lease, PgHolder, PgRunnerLock, Takeover, holder};
pub use name::{CHANNEL_PREFIX, MAX_CHANNEL, QueueName};
pub use notify::Notifier;
pub use queue::PgQueue;
pub use record::{LEGACY_CHANNEL, Recorder, notify_hubs};
pub use store::PgStore;
pub use target::{RootCerts, SslMode, Target, has_password, mask};

/// The example of docs/postgres.md is compiled as a doctest of this item.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/postgres.md")]
pub struct PostgresDoctests;
