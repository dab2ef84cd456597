//! The queue's behaviour, written once and run against each driver: SQLite always, PostgreSQL
//! when this machine has its server binaries (without them a test says `SKIPPED` and passes,
//! but under CI it fails). Each test is a function of a [`Driver`], which makes a workspace
//! whose queue is on that database; the test then goes where a user or a host goes (the
//! `hookq` binary, the library's `Queue`) and reads the queue through the library
//! ([`Ws::pending`], [`Ws::history`]), so one body states what both databases promise. Where
//! they promise different things (what a drop of a started point keeps, where logs are), the
//! test says so by matching on the driver.
//!
//! [`conformance!`] instantiates the functions it names once per driver, as
//! `<module>::sqlite::<test>` and `<module>::postgres::<test>`: `cargo test --test queue
//! conformance` runs the suite, `-- postgres` picks PostgreSQL's half with the rest of its
//! tests.

/// Instantiates each named `fn(Driver)` of the calling module as a test per driver.
macro_rules! conformance {
    ($($test:ident),+ $(,)?) => {
        mod sqlite {
            $(
                #[test]
                fn $test() {
                    super::$test($crate::conformance::Driver::Sqlite);
                }
            )+
        }
        #[cfg(feature = "postgres")]
        mod postgres {
            $(
                #[test]
                fn $test() {
                    if $crate::postgres::without_postgres(stringify!($test)) {
                        return;
                    }
                    super::$test($crate::conformance::Driver::Postgres);
                }
            )+
        }
    };
}

mod drain;
mod pause;
mod reads;

use crate::support::queue::{Config, Ws};

/// The database a test's queue is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    /// The workspace's `arc.db`.
    Sqlite,
    /// Queue `q` in a fresh database of the binary's throwaway cluster.
    #[cfg(feature = "postgres")]
    Postgres,
}

impl Driver {
    /// A workspace after `hookq init` whose config is `cfg` with the `extra` lines under
    /// `[queue]`, its queue on this driver's database.
    pub fn workspace(self, cfg: &Config, extra: &str) -> Ws {
        match self {
            Self::Sqlite => {
                let ws = Ws::init();
                ws.write_config_text(with_queue_lines(&cfg.text(), extra).as_bytes());
                ws
            }
            #[cfg(feature = "postgres")]
            Self::Postgres => crate::postgres::cli::pg_workspace_with(cfg, extra).0,
        }
    }

    /// `cfg`'s text for `ws`, keeping the database its config names now: what a user editing
    /// the hooks of a workspace writes.
    pub fn config_text(self, ws: &Ws, cfg: &Config) -> String {
        let now = ws.read(ws.config_path());
        let kept: String = now
            .lines()
            .filter(|l| l.starts_with("database = ") || l.starts_with("name = "))
            .map(|l| format!("{l}\n"))
            .collect();
        with_queue_lines(&cfg.text(), &kept)
    }

    /// The PostgreSQL database URL `ws`'s config names.
    #[cfg(feature = "postgres")]
    pub fn database_url(self, ws: &Ws) -> String {
        let text = ws.read(ws.config_path());
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix("database = "))
            .unwrap_or_else(|| panic!("no database in {text}"));
        toml::from_str::<toml::Value>(&format!("v = {line}")).unwrap()["v"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Whether this is PostgreSQL.
    pub fn is_postgres(self) -> bool {
        self != Self::Sqlite
    }
}

/// `text` with `lines` at the top of its `[queue]` table.
fn with_queue_lines(text: &str, lines: &str) -> String {
    text.replacen("[queue]\n", &format!("[queue]\n{lines}"), 1)
}
