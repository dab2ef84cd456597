//! The P figures: the queue on PostgreSQL, against floors measured on the same server in the
//! same run. The bench starts a PostgreSQL of its own (the machine's `initdb` and `postgres`,
//! as the tests do, in the bench dir so on the same file system as every other figure) with
//! PostgreSQL's durable defaults (`fsync`, `synchronous_commit` and `full_page_writes` on), and
//! connects over loopback TCP as a host on the same machine would.
//!
//! Compiled only with the `postgres` feature (on by default).

#[allow(dead_code)]
#[path = "../../../tests/postgres/cluster.rs"]
mod cluster;
pub mod drain;
pub mod fixture;
pub mod fleet;
pub mod hub;
pub mod record;
#[allow(dead_code)]
#[path = "../../../tests/postgres/relay.rs"]
mod relay;
pub mod scale;
pub mod takeover;
pub mod writers;

use std::path::Path;

use super::report::Row;
use super::sizes::Sizes;

/// What keeps this machine from starting the bench's PostgreSQL (no server binaries, and how
/// to install them), `None` when it can.
#[allow(dead_code)] // The bench itself just fails; the smoke test skips.
pub fn server_missing() -> Option<String> {
    cluster::find_bin_dir().err()
}

/// A running server of the bench's own.
pub struct Server {
    cluster: cluster::Cluster,
}

impl Server {
    /// Starts a durable cluster in `dir`.
    pub fn start(dir: &Path) -> Self {
        Self {
            cluster: cluster::cluster_with(Some(dir), cluster::Durability::Full),
        }
    }

    /// A durable cluster in `dir` taking up to `max_connections` connections at once.
    pub fn start_sized(dir: &Path, max_connections: usize) -> Self {
        Self {
            cluster: cluster::cluster_sized(Some(dir), cluster::Durability::Full, max_connections),
        }
    }

    /// The server's own pid (the postmaster's), from `postmaster.pid`: every server process
    /// is below it.
    pub fn pid(&self) -> u32 {
        std::fs::read_to_string(self.cluster.dir.join("data/postmaster.pid"))
            .ok()
            .and_then(|t| t.lines().next()?.trim().parse().ok())
            .expect("the server's pid in postmaster.pid")
    }

    /// A new empty database: its URL, as the `hookq` role over loopback TCP without TLS.
    pub fn database(&self) -> String {
        let db = self.cluster.database();
        self.cluster.url(&db, "")
    }

    /// Writes every dirty page out (`CHECKPOINT`): setup's writes are on disk before a
    /// measurement starts, rather than flushed by the checkpointer in its middle.
    pub fn checkpoint(&self) {
        self.cluster
            .admin("postgres")
            .batch_execute("CHECKPOINT")
            .expect("checkpoint");
    }

    /// The server's loopback TCP port.
    pub fn port(&self) -> u16 {
        self.cluster.port
    }

    /// What `SHOW server_version` says.
    pub fn version(&self) -> String {
        self.cluster
            .admin("postgres")
            .query_one("SHOW server_version", &[])
            .expect("server version")
            .get(0)
    }
}

/// Measures P8a and P8b alone, on a server started in `dir`.
// The bench's `--takeover` calls it; the smoke test of the harness runs every figure instead.
#[allow(dead_code)]
pub fn measure_takeover(dir: &Path, sizes: &Sizes, step: &dyn Fn(&str)) -> Vec<Row> {
    step("P: a durable PostgreSQL of the bench's own");
    let server = Server::start(dir);
    step("P8: takeover after the holding hub freezes, or its connections go silent");
    takeover::failed_rows(&takeover::measure_failed(&server, dir, sizes))
}

/// Only P6 and P7 (with P6b, P6c), many writers on one queue, on a server started in `dir`. (The bench's
/// `--writers`; the smoke test runs them with the rest.)
#[allow(dead_code)]
pub fn measure_writers(dir: &Path, sizes: &Sizes, step: &dyn Fn(&str)) -> Vec<Row> {
    step("P: a durable PostgreSQL of the bench's own");
    let server = Server::start(dir);
    step("P6, P7: many writers on one queue");
    writers::rows(&writers::measure(&server, dir, sizes))
}

/// Every P figure.
pub struct PgFigures {
    /// The server's version.
    pub version: String,
    /// P0, P1.
    pub record: record::Recording,
    /// P2.
    pub drain: drain::PgDrain,
    /// P3a, P3b.
    pub hub: hub::PgHub,
    /// P4.
    pub takeover: takeover::Takeover,
    /// P8a, P8b.
    pub failed: takeover::Failed,
    /// P5a, P5b.
    pub scale: scale::PgScale,
    /// P6, P6b, P6c, P7.
    pub writers: writers::Writers,
    /// Q1, Q2.
    pub fleet: fleet::PgFleet,
}

/// Measures every P figure on a server started in `dir`, `step` printing progress.
pub fn measure(dir: &Path, sizes: &Sizes, step: &dyn Fn(&str)) -> PgFigures {
    step("P: a durable PostgreSQL of the bench's own");
    let server = Server::start(dir);
    let version = server.version();
    step("P0, P1: recording against a bare PostgreSQL commit");
    let record = record::measure(&server, sizes);
    step("P2: draining on PostgreSQL against the spawn floor");
    let drain = drain::measure(&server, dir, sizes);
    step("P3: hub on PostgreSQL, commit -> hook start");
    let hub = hub::measure(&server, dir, sizes);
    step("P4: takeover after kill -9 of the holding hub");
    let takeover = takeover::measure(&server, dir, sizes);
    step("P8: takeover after the holding hub freezes, or its connections go silent");
    let failed = takeover::measure_failed(&server, dir, sizes);
    // Before P5: its million-row tables are vacuumed by the server's autovacuum for minutes
    // after it, which would take CPU from the eight writers' rounds.
    step("P6, P7: many writers on one queue");
    let writers = writers::measure(&server, dir, sizes);
    step("P5: PostgreSQL at scale");
    let scale = scale::measure(&server, sizes);
    // The Q figures take a server of their own, sized for a hub of many queues.
    drop(server);
    let p6c = (writers.p6c_alone_ms, writers.beside_hubs_ms);
    let fleet = fleet::measure(dir, sizes, Some(p6c), step);
    PgFigures {
        version,
        record,
        drain,
        hub,
        takeover,
        failed,
        scale,
        writers,
        fleet,
    }
}

/// The rows of the P figures.
pub fn rows(p: &PgFigures, sizes: &Sizes) -> Vec<Row> {
    let mut rows = record::rows(&p.record, &p.version);
    rows.extend(drain::rows(&p.drain));
    rows.extend(hub::rows(&p.hub));
    rows.extend(takeover::rows(&p.takeover));
    rows.extend(takeover::failed_rows(&p.failed));
    rows.extend(scale::rows(&p.scale, sizes));
    rows.extend(writers::rows(&p.writers));
    rows.extend(fleet::rows(&p.fleet));
    rows
}
