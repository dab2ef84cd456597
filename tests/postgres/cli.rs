//! The commands that record and drain, through the real binary, on a workspace whose queue is
//! on PostgreSQL: `init --database`, `task add|move`, `plan cancel`, `run`, `hub`, `check`.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use hookq::queue::Wait;
use hookq::queue::pg::{PgStore, QueueName, Target};

use crate::postgres::cluster::{PASSWORD, cluster};
use crate::support::queue::{Config, Ws};

const HOOKS: &str = r#"after_fail = ['echo "fail $ARC_TASK $ARC_STATE" >> ran']
after_rework = ['echo "rework $ARC_TASK" >> ran']
"#;

/// A workspace after `hookq init` whose config names a fresh database and queue `q`, with
/// `HOOKS`: the database's name and URL.
fn pg_workspace() -> (Ws, String, String) {
    pg_workspace_with(&Config::hooks(HOOKS), "")
}

/// A workspace after `hookq init` whose config is `cfg` with queue `q` in a fresh database and
/// the `extra` lines under `[queue]`: the database's name and URL.
pub(crate) fn pg_workspace_with(cfg: &Config, extra: &str) -> (Ws, String, String) {
    let ws = Ws::init();
    let db = cluster().database();
    let url = cluster().url(&db, "");
    ws.write_config_text(pg_config(cfg, &url, "q", extra).as_bytes());
    // Holding a password, it is its owner's alone, as `init --database` writes it.
    set_mode(&ws.config_path(), 0o600);
    (ws, db, url)
}

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn set_mode(path: &std::path::Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `cfg`'s text with its queue named `queue` in `url`'s database and the `extra` lines under
/// `[queue]`.
pub(crate) fn pg_config(cfg: &Config, url: &str, queue: &str, extra: &str) -> String {
    cfg.text().replacen(
        "[queue]\n",
        &format!("[queue]\ndatabase = {url:?}\nname = {queue:?}\n{extra}"),
        1,
    )
}

pub(crate) fn open(url: &str, queue: &str) -> PgStore {
    PgStore::open(&Target::parse(url).unwrap(), QueueName::new(queue).unwrap()).unwrap()
}

/// `(task, point, state)` of the queue's pending points, in order.
fn pending(s: &mut PgStore) -> Vec<(String, String)> {
    s.pending(0, 1000, None)
        .unwrap()
        .into_iter()
        .map(|r| (r.task.to_string(), r.point.to_string()))
        .collect()
}

/// `(task, point, outcome)` of the queue's history, oldest first.
fn history(s: &mut PgStore) -> Vec<(String, String, String)> {
    let mut h = s.history(None, None, 1000).unwrap();
    h.reverse();
    h.into_iter()
        .map(|r| {
            (
                r.task.to_string(),
                r.point.to_string(),
                r.outcome.to_string(),
            )
        })
        .collect()
}

/// How many points wait in the workspace's SQLite file, if it has one: read from the file
/// itself, as `ws.pending()` reads the queue the config names.
fn sqlite_pending(ws: &Ws) -> i64 {
    if !ws.db_path().exists() {
        return 0;
    }
    ws.db()
        .query_row("SELECT COUNT(*) FROM pending_hooks", [], |r| r.get(0))
        .unwrap_or(0)
}

pub(crate) fn no_password(out: &crate::support::queue::Out) {
    assert!(
        !out.stdout().contains(PASSWORD) && !out.stderr().contains(PASSWORD),
        "the password was printed: {}",
        out.describe()
    );
}

#[test]
fn task_commands_record_into_postgres_and_run_drains_it() {
    if crate::postgres::without_postgres("task_commands_record_into_postgres_and_run_drains_it") {
        return;
    }
    let (ws, _db, url) = pg_workspace();
    let mut s = open(&url, "q");
    no_password(&ws.task_add("t1", "p", "failed.x").ok());
    no_password(&ws.task_add("t2", "p", "todo.ready").ok());
    let out = ws
        .hookq(&["task", "move", "t1", "review.rework_pending", "--no-run"])
        .ok();
    assert!(
        out.stdout().contains("recorded after_rework"),
        "{}",
        out.describe()
    );
    assert_eq!(
        pending(&mut s),
        [
            ("t1".to_owned(), "after_fail".to_owned()),
            ("t1".to_owned(), "after_rework".to_owned())
        ]
    );
    assert_eq!(sqlite_pending(&ws), 0, "nothing went into arc.db");
    assert!(
        ws.lines("ran").is_empty(),
        "task add and --no-run run nothing"
    );

    let out = ws.hookq(&["run"]).ok();
    no_password(&out);
    assert_eq!(ws.lines("ran"), ["fail t1 failed.x", "rework t1"]);
    assert!(pending(&mut s).is_empty());
    assert_eq!(
        history(&mut s),
        [
            ("t1".into(), "after_fail".into(), "ok".into()),
            ("t1".into(), "after_rework".into(), "ok".into())
        ]
    );

    // An owner transition runs what is pending when the lock is free right now...
    ws.hookq(&["task", "move", "t2", "failed.y"]).ok();
    assert_eq!(ws.lines("ran").last().unwrap(), "fail t2 failed.y");
    assert!(pending(&mut s).is_empty());

    // ... and leaves it to the holder when it is not, as `run --wait` does.
    let held = s.lock(Wait::No).unwrap().unwrap();
    let out = ws
        .hookq(&["task", "move", "t2", "review.rework_pending"])
        .ok();
    assert!(
        out.stdout().contains("runner lock is held elsewhere"),
        "{}",
        out.describe()
    );
    let out = ws.hookq(&["run", "--wait", "1"]).expect_code(6);
    assert!(
        out.stderr()
            .contains("error: queue q: runner lock is held by pid"),
        "{}",
        out.describe()
    );
    no_password(&out);
    assert_eq!(pending(&mut s).len(), 1);
    held.release().unwrap();

    // A cancel records a point per unfinished task and runs them.
    let out = ws.hookq(&["plan", "cancel", "p"]).ok();
    assert!(
        out.stdout().contains("plan p: cancelled 2 task(s)"),
        "{}",
        out.describe()
    );
    let ran = ws.lines("ran");
    assert_eq!(
        ran[ran.len() - 3..],
        [
            "rework t2",
            "fail t1 failed.cancelled",
            "fail t2 failed.cancelled"
        ]
    );
    assert!(pending(&mut s).is_empty());
    let out = ws
        .hookq(&["task", "add", "t1", "--plan", "p"])
        .expect_code(2);
    assert!(
        out.stderr().contains("task t1 exists already"),
        "{}",
        out.describe()
    );

    // The logs of the hooks this host ran, read here; a task the queue does not know is named
    // with the queue, its URL masked.
    let out = ws.hookq(&["queue", "log", "t1"]).ok();
    assert!(out.stdout().contains("==> "), "{}", out.describe());
    // A task whose hooks this host never ran: the message says where its logs are.
    ws.hookq(&["task", "add", "t9", "--plan", "p"]).ok();
    let out = ws.hookq(&["queue", "log", "t9"]).ok();
    assert!(
        out.stdout().starts_with(
            "no hook logs for task t9 on this host: each command's log is on the host that ran it"
        ),
        "{}",
        out.describe()
    );
    let out = ws.hookq(&["queue", "log", "nosuch"]).expect_code(4);
    assert!(
        out.stderr()
            .contains("no task nosuch in queue q on postgres")
            && out.stderr().contains("and no hook logs for it"),
        "{}",
        out.describe()
    );
    no_password(&out);
}

#[test]
fn task_and_queue_views_read_postgres() {
    if crate::postgres::without_postgres("task_and_queue_views_read_postgres") {
        return;
    }
    let (ws, _db, url) = pg_workspace();
    let mut s = open(&url, "q");
    ws.task_add("t1", "p", "failed.x").ok();
    ws.task_add("t2", "p", "todo.ready").ok();
    ws.task_add("t3", "other", "failed.y").ok();

    let out = ws.hookq(&["task", "list", "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout()).unwrap();
    let ids: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["t1", "t2", "t3"]);
    let out = ws.hookq(&["task", "list", "--plan", "p"]).ok();
    assert!(
        out.stdout().contains("t2") && !out.stdout().contains("t3"),
        "{}",
        out.describe()
    );
    let out = ws.hookq(&["task", "show", "t1", "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout()).unwrap();
    assert_eq!(v["pending"][0]["point"], "after_fail");
    ws.hookq(&["task", "show", "nope"]).expect_code(4);

    // The listing names the queue's lock holder.
    let held = s.lock(Wait::No).unwrap().unwrap();
    let out = ws.hookq(&["queue"]).ok();
    assert!(
        out.stdout()
            .contains("runner lock of queue q: held by pid "),
        "{}",
        out.describe()
    );
    assert!(out.stdout().contains("after_fail"), "{}", out.describe());
    let out = ws.hookq(&["queue", "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout()).unwrap();
    assert_eq!(v["pending"].as_array().unwrap().len(), 2);
    assert!(v["lock"]["backend_pid"].as_i64().is_some(), "{v}");
    held.release().unwrap();
    let out = ws.hookq(&["queue"]).ok();
    assert!(
        out.stdout().contains("runner lock of queue q: free"),
        "{}",
        out.describe()
    );

    // Dropped, shown, retried, counted.
    let out = ws.hookq(&["queue", "drop", "1"]).ok();
    assert!(
        out.stdout()
            .contains("dropped occurrence 1 (after_fail for task t1)"),
        "{}",
        out.describe()
    );
    ws.hookq(&["queue", "drop", "1"]).expect_code(4);
    let out = ws.hookq(&["queue", "show", "1", "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout()).unwrap();
    assert_eq!(v["status"], "cleared");
    assert_eq!(v["history"][0]["outcome"], "dropped");
    assert!(
        v["logs"]
            .as_str()
            .unwrap()
            .contains("on the host that ran it"),
        "{v}"
    );
    let out = ws.hookq(&["queue", "show", "1"]).ok();
    assert!(
        out.stdout()
            .contains("logs      each command's log is on the host that ran it"),
        "{}",
        out.describe()
    );
    let hid = v["history"][0]["id"].as_i64().unwrap().to_string();
    let out = ws.hookq(&["queue", "history", "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout()).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1);
    let out = ws.hookq(&["queue", "retry", &hid]).ok();
    assert!(
        out.stdout()
            .contains("queued after_fail again as occurrence 3"),
        "{}",
        out.describe()
    );
    let out = ws.hookq(&["queue", "stats", "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout()).unwrap();
    assert_eq!(
        (v["pending"].as_i64(), v["tasks"].as_i64()),
        (Some(2), Some(3)),
        "{v}"
    );
    ws.hookq(&["queue", "show", "99"]).expect_code(4);
    assert_eq!(pending(&mut s).len(), 2);
}

#[test]
fn the_environment_wins_over_the_config_and_check_names_the_server() {
    if crate::postgres::without_postgres(
        "the_environment_wins_over_the_config_and_check_names_the_server",
    ) {
        return;
    }
    let (ws, db, url) = pg_workspace();
    let other_db = cluster().database();
    let other = cluster().url(&other_db, "");
    ws.hookq_env(
        &["task", "add", "t1", "--plan", "p", "--phase", "failed.x"],
        &[("HOOKQ_DATABASE_URL", &other)],
    )
    .ok();
    assert_eq!(pending(&mut open(&other, "q")).len(), 1);
    assert!(pending(&mut open(&url, "q")).is_empty());

    let out = ws.hookq(&["check"]).ok();
    no_password(&out);
    let line = out
        .stdout()
        .lines()
        .find(|l| l.starts_with("queue q on "))
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("{}", out.describe()));
    assert!(
        line.contains(&format!("/{db}?")) && line.contains("(from config.toml): PostgreSQL "),
        "{line}"
    );
    let version = hookq::queue::pg::schema::schema_version();
    assert!(
        line.contains(&format!(
            "schema version {version}; this hookq writes version {version}"
        )),
        "{line}"
    );
    let out = ws
        .hookq_env(&["check", "--json"], &[("HOOKQ_DATABASE_URL", &other)])
        .ok();
    no_password(&out);
    let v: serde_json::Value = serde_json::from_str(&out.stdout()).unwrap();
    let d = &v["database"];
    assert_eq!(d["from"], "HOOKQ_DATABASE_URL");
    assert_eq!(d["queue"], "q");
    assert_eq!(d["schema_version"], d["supported_schema_version"]);
    assert!(
        d["server_version"].as_str().is_some_and(|s| !s.is_empty()),
        "{d}"
    );

    // A wrong password is refused in one line, without it.
    let wrong = other.replace(PASSWORD, "not-the-Pa55word");
    let out = ws
        .hookq_env(&["run"], &[("HOOKQ_DATABASE_URL", &wrong)])
        .expect_code(5);
    assert!(
        !out.stderr().contains("not-the-Pa55word"),
        "{}",
        out.describe()
    );
    assert!(
        out.stderr()
            .starts_with("error: queue q: cannot connect to"),
        "{}",
        out.describe()
    );
}

#[test]
fn init_with_a_database_writes_it_and_names_the_queue_after_the_folder() {
    if crate::postgres::without_postgres(
        "init_with_a_database_writes_it_and_names_the_queue_after_the_folder",
    ) {
        return;
    }
    let ws = Ws::new();
    let db = cluster().database();
    let url = cluster().url(&db, "");
    let out = ws.hookq(&["init", "--database", &url]).expect_code(0);
    no_password(&out);
    // Its one line on stderr is the warning that the config holds the password.
    assert_eq!(out.stderr().lines().count(), 1, "{}", out.describe());
    assert_eq!(out.warnings().len(), 1, "{}", out.describe());
    assert!(
        out.stdout().contains("queue database postgres://hookq:"),
        "{}",
        out.describe()
    );
    assert!(
        !ws.db_path().exists(),
        "no SQLite file for a PostgreSQL workspace"
    );
    assert!(
        std::fs::read_to_string(ws.config_path())
            .unwrap()
            .contains("database = ")
    );
    let out = ws.hookq(&["check", "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout()).unwrap();
    let folder = ws.root().file_name().unwrap().to_str().unwrap().to_owned();
    assert_eq!(v["database"]["queue"], folder.as_str());
    // init set the queue up.
    assert_eq!(
        v["database"]["schema_version"],
        v["database"]["supported_schema_version"]
    );
    ws.task_add("t1", "p", "failed.x").ok();
    assert_eq!(pending(&mut open(&url, &folder)).len(), 1);
    let out = ws
        .hookq(&["init", "--database", "postgres://u@h/d?sslmode=bogus"])
        .expect_code(2);
    assert!(out.stderr().contains("sslmode"), "{}", out.describe());
}

#[test]
fn a_hub_drains_on_notifications_and_outlives_an_outage() {
    if crate::postgres::without_postgres("a_hub_drains_on_notifications_and_outlives_an_outage") {
        return;
    }
    let (ws, db, url) = pg_workspace();
    let mut hub = ws.spawn_env(&["hub"], &[("HOOKQ_LOG", "info")]);
    ws.task_add("t1", "p", "failed.x").ok();
    ws.eventually("the hub runs t1's point", || ws.lines("ran").len() == 1);

    // The server ends every connection of the hub, three times: each time it connects again
    // and drains on.
    let mut admin = cluster().admin(&db);
    let outages = 3;
    for n in 2..=outages + 1 {
        ws.eventually("the hub clears what it ran", || {
            let left: i64 = admin
                .query_one("SELECT COUNT(*) FROM hookq_pending_hooks", &[])
                .unwrap()
                .get(0);
            left == 0
        });
        let ended = admin
            .execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                 WHERE datname = current_database() AND application_name LIKE 'hookq %'",
                &[],
            )
            .unwrap();
        assert!(ended >= 2, "the hub holds its reads and its lock: {ended}");
        // The point comes once the hub has seen the outage, as its warning line says.
        crate::support::poll(
            "the hub to see the outage",
            crate::support::POLL,
            || {
                let lost = hub
                    .stderr_so_far()
                    .matches("hub lost the queue's database")
                    .count();
                (lost == n - 1).then_some(())
            },
            || hub.stderr_so_far(),
        );
        ws.task_add(&format!("t{n}"), "p", &format!("failed.n{n}"))
            .ok();
        crate::support::poll(
            &format!("the hub to run t{n}'s point after an outage"),
            crate::support::POLL,
            || (ws.lines("ran").len() >= n).then_some(()),
            || hub.stderr_so_far(),
        );
    }
    assert!(!hub.exited());
    hub.signal(rustix::process::Signal::TERM);
    let out = hub.wait_within(crate::support::HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    no_password(&out);
    let warnings = out.warnings();
    assert_eq!(
        warnings.len(),
        outages,
        "one line per outage: {}",
        out.describe()
    );
    assert!(
        warnings[0].starts_with("warning: hub lost the queue's database"),
        "{warnings:?}"
    );
    assert!(pending(&mut open(&url, "q")).is_empty());
    assert_eq!(
        ws.lines("ran"),
        [
            "fail t1 failed.x",
            "fail t2 failed.n2",
            "fail t3 failed.n3",
            "fail t4 failed.n4"
        ]
    );
}

#[test]
fn a_hub_waiting_for_the_lock_keeps_one_connection_and_takes_over_when_it_is_freed() {
    if crate::postgres::without_postgres(
        "a_hub_waiting_for_the_lock_keeps_one_connection_and_takes_over_when_it_is_freed",
    ) {
        return;
    }
    let (ws, _db, url) = pg_workspace();
    let s = open(&url, "q");
    let held = s.lock(Wait::No).unwrap().expect("free");
    let hub = ws.spawn(&["hub"]);
    // From its first sighting, however long the hub takes to start and connect, and for three
    // seconds more, the waiting hub's runner connection is one and the same.
    let mut watch = open(&url, "q");
    let name = format!("hookq runner pid {} %", hub.pid());
    let mut backends = std::collections::BTreeSet::new();
    let mut look = || {
        for row in watch
            .client()
            .query(
                "SELECT pid FROM pg_stat_activity WHERE application_name LIKE $1",
                &[&name],
            )
            .unwrap()
        {
            backends.insert(row.get::<_, i32>(0));
        }
        backends.len()
    };
    let seen = crate::support::within(crate::support::HANG, Duration::from_millis(100), || {
        (look() >= 1).then_some(())
    });
    if seen.is_some() {
        // A connection made again has no event to wait for: the three seconds are the window
        // in which one would show, cut short if a second does.
        crate::support::within(Duration::from_secs(3), Duration::from_millis(100), || {
            (look() > 1).then_some(())
        });
    }
    assert!(
        seen.is_some(),
        "the hub never connected to wait for the lock"
    );
    assert_eq!(
        backends.len(),
        1,
        "the waiting hub's lock connections: {backends:?}"
    );
    // Freed, the lock goes to the hub, which then runs what is recorded.
    held.release().unwrap();
    ws.eventually("the hub holds the lock", || {
        hookq::queue::pg::holder(
            watch.client(),
            &hookq::queue::pg::QueueName::new("q").unwrap(),
        )
        .unwrap()
        .and_then(|h| h.pid)
            == Some(hub.pid() as u32)
    });
    ws.task_add("t1", "p", "failed.x").ok();
    ws.eventually("the hub runs t1's point", || ws.lines("ran").len() == 1);
    hub.signal(rustix::process::Signal::TERM);
    let out = hub.wait_within(crate::support::HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
}

/// A fresh folder made a git repository, and the URL `url_of` makes for a fresh database.
fn init_in_a_repository(url_of: impl FnOnce(&str) -> String) -> (Ws, String) {
    let ws = Ws::new();
    ws.sh_in(ws.root(), "git", &["init", "-q"]);
    let url = url_of(&cluster().database());
    (ws, url)
}

#[test]
fn a_password_given_to_init_is_written_readable_by_its_owner_only() {
    if crate::postgres::without_postgres(
        "a_password_given_to_init_is_written_readable_by_its_owner_only",
    ) {
        return;
    }
    let (ws, url) = init_in_a_repository(|db| cluster().url(db, ""));
    let config = ws.config_path();
    let out = ws.hookq(&["init", "--database", &url]).expect_code(0);
    no_password(&out);
    assert_eq!(
        out.stderr(),
        format!(
            "warning: {} holds the database password: it is readable by you only (mode 0600) \
             and git ignores it; HOOKQ_DATABASE_URL keeps the password out of the file\n",
            config.display()
        ),
        "{}",
        out.describe()
    );
    assert_eq!(mode(&config), 0o600);
    assert!(std::fs::read_to_string(&config).unwrap().contains(PASSWORD));
    // Nothing of the state dir, the config with its password least, is for a commit.
    assert_eq!(
        ws.sh_in(
            ws.root(),
            "git",
            &["status", "--porcelain", "--untracked-files=all"]
        ),
        ""
    );
    // `check` has nothing to say of a config only its owner reads.
    no_password(&ws.hookq(&["check"]).ok());

    // Run again, init keeps the config as it is, 0600, and says nothing more.
    let out = ws.hookq(&["init", "--database", &url]).ok();
    no_password(&out);
    assert!(out.stdout().contains("kept "), "{}", out.describe());
    assert_eq!(mode(&config), 0o600);

    // Loosened by hand, `check` (plain and JSON) and `init` say so in one line, and init
    // leaves the mode to its owner.
    set_mode(&config, 0o640);
    let exposed = format!(
        "warning: {} holds the database password and is readable by others (mode 0640): \
         chmod 600 it, or give the URL in HOOKQ_DATABASE_URL instead\n",
        config.display()
    );
    for args in [
        &["check"][..],
        &["check", "--json"],
        &["init", "--database", &url],
    ] {
        let out = ws.hookq(args).expect_code(0);
        no_password(&out);
        assert_eq!(out.stderr(), exposed, "{}", out.describe());
    }
    assert_eq!(mode(&config), 0o640);
    // The URL in the environment instead: the warning is about the file, which still holds it.
    let out = ws
        .hookq_env(&["check"], &[("HOOKQ_DATABASE_URL", &url)])
        .expect_code(0);
    assert_eq!(out.stderr(), exposed, "{}", out.describe());
}

#[test]
fn a_password_pair_outside_git_is_kept_from_others_and_git_is_not_claimed() {
    if crate::postgres::without_postgres(
        "a_password_pair_outside_git_is_kept_from_others_and_git_is_not_claimed",
    ) {
        return;
    }
    let ws = Ws::new();
    let db = cluster().database();
    let port = Target::parse(&cluster().url(&db, ""))
        .unwrap()
        .config()
        .get_ports()[0];
    let pairs = format!(
        "host=127.0.0.1 port={port} user=hookq password={PASSWORD} dbname={db} sslmode=disable"
    );
    let out = ws.hookq(&["init", "--database", &pairs]).expect_code(0);
    no_password(&out);
    assert!(
        out.stdout().contains("is not in a git repository"),
        "{}",
        out.describe()
    );
    assert_eq!(
        out.stderr(),
        format!(
            "warning: {} holds the database password: it is readable by you only (mode 0600); \
             HOOKQ_DATABASE_URL keeps the password out of the file\n",
            ws.config_path().display()
        ),
        "{}",
        out.describe()
    );
    assert_eq!(mode(&ws.config_path()), 0o600);
    // The pairs connect as the URL does.
    let out = ws.hookq(&["check", "--json"]).ok();
    no_password(&out);
}

#[test]
fn a_url_without_a_password_is_written_as_any_config_and_nothing_is_said() {
    if crate::postgres::without_postgres(
        "a_url_without_a_password_is_written_as_any_config_and_nothing_is_said",
    ) {
        return;
    }
    // Over the unix socket, where the test server trusts its local users.
    let (ws, url) = init_in_a_repository(|db| {
        format!(
            "host={} port={} user=hookq dbname={db} sslmode=disable",
            cluster().dir.display(),
            cluster().port
        )
    });
    let out = ws.hookq(&["init", "--database", &url]).ok();
    assert!(out.stderr().is_empty(), "{}", out.describe());
    assert!(out.stdout().contains("wrote "), "{}", out.describe());
    // The mode a config gets without a password, under the same umask.
    let sqlite = Ws::init();
    assert_eq!(mode(&ws.config_path()), mode(&sqlite.config_path()));
}

/// The password of the broken connection strings below.
const MARKER: &str = "Zx9Qv7Lk";

/// Connection strings that cannot be read, each holding [`MARKER`] where a password goes (or
/// was meant to): URLs that lost a character of their scheme or their scheme, a password-like
/// key misspelt, a quote left open, a password holding `/`, a password inside another value.
fn broken_strings() -> Vec<String> {
    [
        "postgres//hq:{}@127.0.0.1:39329/hq",
        "postgres:/hq:{}@127.0.0.1:39329/hq",
        "hq:{}@127.0.0.1:39329/hq",
        "host=127.0.0.1 passwrd={} dbname=hq",
        "host=127.0.0.1 password='{} dbname=hq",
        "host=127.0.0.1 pwd = \"{}\" dbname=hq",
        "postgres://hq:ab/{}@127.0.0.1:1/hq?sslmode=bogus",
        "postgres://hq@127.0.0.1:1/hq?passwd={}&sslmode=bogus",
        "host=127.0.0.1 sslmode='x password={}'",
        "postgres://hq:{}@127.0.0.1:notaport/hq",
        "=' password='{}",
    ]
    .iter()
    .map(|t| t.replace("{}", MARKER))
    .collect()
}

fn no_marker(out: &crate::support::queue::Out, what: &str) {
    assert!(
        !out.stdout().contains(MARKER) && !out.stderr().contains(MARKER),
        "{what}: the password was printed: {}",
        out.describe()
    );
}

#[test]
fn a_connection_string_that_cannot_be_read_never_shows_its_password() {
    if crate::postgres::without_postgres(
        "a_connection_string_that_cannot_be_read_never_shows_its_password",
    ) {
        return;
    }
    let commands: [&[&str]; 10] = [
        &["queue"],
        &["queue", "--json"],
        &["task", "add", "t1", "--plan", "p"],
        &["task", "list", "--json"],
        &["plan", "cancel", "p"],
        &["check"],
        &["check", "--json"],
        &["run"],
        &["hub"],
        &["init"],
    ];
    for text in broken_strings() {
        // In the environment.
        let ws = Ws::init();
        for args in commands {
            let out = ws
                .hookq_env(args, &[("HOOKQ_DATABASE_URL", &text)])
                .expect_code(2);
            no_marker(&out, &format!("{args:?} under HOOKQ_DATABASE_URL={text}"));
            assert!(
                out.stderr().starts_with("error: ") && out.stderr().contains("connection string"),
                "{}",
                out.describe()
            );
        }
        // In config.toml.
        let cfg = Config::hooks(HOOKS).text().replacen(
            "[queue]\n",
            &format!(
                "[queue]\ndatabase = {}\n",
                hookq::queue::config::toml_quote(&text)
            ),
            1,
        );
        ws.write_config_text(cfg.as_bytes());
        for args in commands {
            let out = ws.hookq(args).expect_code(2);
            no_marker(&out, &format!("{args:?} with database = {text}"));
        }
        // Given to init, which makes nothing.
        let fresh = Ws::new();
        let out = fresh.hookq(&["init", "--database", &text]).expect_code(2);
        no_marker(&out, &format!("init --database {text}"));
        assert!(!fresh.root().join(".radian").exists(), "{text}");
    }
}

#[test]
fn init_under_hookq_database_url_sets_up_the_postgres_queue_and_makes_no_sqlite_file() {
    if crate::postgres::without_postgres(
        "init_under_hookq_database_url_sets_up_the_postgres_queue_and_makes_no_sqlite_file",
    ) {
        return;
    }
    let ws = Ws::new();
    let db = cluster().database();
    let url = cluster().url(&db, "");
    let env = [("HOOKQ_DATABASE_URL", url.as_str())];
    let out = ws.hookq_env(&["init"], &env).expect_code(0);
    no_password(&out);
    let folder = ws.root().file_name().unwrap().to_str().unwrap().to_owned();
    assert!(
        out.stdout().contains(&format!(
            "queue database postgres://hookq:***@127.0.0.1:{}/{db}?sslmode=disable (from HOOKQ_DATABASE_URL): queue {folder}, schema version ",
            cluster().port
        )),
        "{}",
        out.describe()
    );
    assert!(
        !ws.db_path().exists(),
        "no SQLite file under HOOKQ_DATABASE_URL"
    );
    assert!(ws.lock_path().exists());
    // The password stays out of the file: the variable gives it.
    let config = std::fs::read_to_string(ws.config_path()).unwrap();
    assert!(!config.contains("database ="), "{config}");
    assert!(out.stderr().is_empty(), "{}", out.describe());
    // The schema and the queue's row are there before the first command.
    let mut admin = cluster().admin(&db);
    let queues: Vec<String> = admin
        .query("SELECT queue FROM hookq_queues", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(queues, std::slice::from_ref(&folder));
    ws.hookq_env(
        &["task", "add", "t1", "--plan", "p", "--phase", "failed.x"],
        &env,
    )
    .ok();
    assert_eq!(pending(&mut open(&url, &folder)).len(), 1);
    assert!(!ws.db_path().exists());
    // Run again, init keeps the config and sets up the same queue.
    let out = ws.hookq_env(&["init"], &env).expect_code(0);
    assert!(out.stdout().contains("kept "), "{}", out.describe());
    assert!(!ws.db_path().exists());
}

#[test]
fn a_failed_init_leaves_nothing_it_made_and_keeps_what_was_there() {
    if crate::postgres::without_postgres(
        "a_failed_init_leaves_nothing_it_made_and_keeps_what_was_there",
    ) {
        return;
    }
    let unreachable = format!("postgres://hookq:{PASSWORD}@127.0.0.1:1/hq?sslmode=disable");
    let bad = "postgres://hookq@127.0.0.1/hq?sslmode=sometimes";
    // Nothing there before: nothing there after.
    for (args, env, code) in [
        (vec!["init", "--database", bad], None, 2),
        (vec!["init", "--database", &unreachable], None, 5),
        (vec!["init"], Some(bad), 2),
        (vec!["init"], Some(unreachable.as_str()), 5),
    ] {
        let ws = Ws::new();
        let env: Vec<(&str, &str)> = env.map(|u| ("HOOKQ_DATABASE_URL", u)).into_iter().collect();
        let out = ws.hookq_env(&args, &env).expect_code(code);
        no_password(&out);
        let left: Vec<_> = std::fs::read_dir(ws.root()).unwrap().collect();
        assert!(
            left.is_empty(),
            "{args:?} left {left:?}: {}",
            out.describe()
        );
        // The next command finds no workspace, so starts no SQLite queue.
        ws.task_add("t1", "p", "failed.x").expect_code(4);
        assert!(!ws.root().join(".radian").exists());
    }
    // A `.radian` of someone else's stays, with what is in it; `arc` inside it goes.
    let ws = Ws::new();
    std::fs::create_dir_all(ws.root().join(".radian/other")).unwrap();
    ws.hookq(&["init", "--database", &unreachable])
        .expect_code(5);
    assert!(ws.root().join(".radian/other").is_dir());
    assert!(!ws.state_dir().exists());
    // A workspace that exists keeps everything it had.
    let ws = Ws::init();
    ws.task_add("t1", "p", "failed.x").ok();
    let before = ws.snapshot();
    let config = std::fs::read(ws.config_path()).unwrap();
    ws.hookq(&["init", "--database", &unreachable])
        .expect_code(5);
    ws.hookq_env(&["init"], &[("HOOKQ_DATABASE_URL", &unreachable)])
        .expect_code(5);
    assert_eq!(std::fs::read(ws.config_path()).unwrap(), config);
    assert!(ws.lock_path().exists());
    assert_eq!(ws.snapshot(), before);
}

#[test]
fn check_with_the_server_down_checks_the_config_lists_the_hooks_then_fails() {
    if crate::postgres::without_postgres(
        "check_with_the_server_down_checks_the_config_lists_the_hooks_then_fails",
    ) {
        return;
    }
    let ws = Ws::init();
    ws.write_config(HOOKS);
    let down = format!("postgres://hookq:{PASSWORD}@127.0.0.1:1/hq?sslmode=disable");
    let env = [("HOOKQ_DATABASE_URL", down.as_str())];
    let out = ws.hookq_env(&["check"], &env).expect_code(5);
    no_password(&out);
    let stdout = out.stdout();
    assert!(
        stdout.starts_with(&format!("{}: ok\n", ws.config_path().display())),
        "{}",
        out.describe()
    );
    assert!(
        stdout.contains("after_fail: 1 command(s)\n  01  echo \"fail"),
        "{stdout}"
    );
    assert!(stdout.contains("after_rework: 1 command(s)"), "{stdout}");
    assert_eq!(out.errors().len(), 1, "{}", out.describe());
    assert!(
        out.stderr()
            .starts_with("error: queue q: cannot connect to postgres://hookq:***@127.0.0.1:1/hq")
            || out
                .stderr()
                .contains(": cannot connect to postgres://hookq:***@127.0.0.1:1/hq"),
        "{}",
        out.describe()
    );
    let out = ws.hookq_env(&["check", "--json"], &env).expect_code(5);
    no_password(&out);
    let v: serde_json::Value = serde_json::from_str(&out.stdout()).unwrap();
    assert_eq!(v["hooks"][1][0], "after_fail", "{v}");
    assert_eq!(
        v["database"]["url"],
        "postgres://hookq:***@127.0.0.1:1/hq?sslmode=disable"
    );
    assert!(
        v["database"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("cannot connect")),
        "{v}"
    );
    assert!(v["database"].get("server_version").is_none(), "{v}");
    // A config that is wrong is said first, whatever the server.
    ws.write_config_text(b"[hooks]\nafter_mrge = []\n");
    let out = ws.hookq_env(&["check"], &env).expect_code(3);
    assert!(out.stderr().contains("after_mrge"), "{}", out.describe());
}

#[test]
fn a_hub_that_never_reached_its_database_says_it_cannot_reach_it_yet() {
    if crate::postgres::without_postgres(
        "a_hub_that_never_reached_its_database_says_it_cannot_reach_it_yet",
    ) {
        return;
    }
    let ws = Ws::init();
    ws.write_config(HOOKS);
    // A port of the test's own where nothing answers as a server: each attempt to connect is
    // accepted, closed and counted.
    let door = ClosingDoor::open();
    let port = door.port();
    let down = format!("postgres://hookq:{PASSWORD}@127.0.0.1:{port}/hq?sslmode=disable");
    let mut hub = ws.spawn_env(&["hub"], &[("HOOKQ_DATABASE_URL", &down)]);
    ws.eventually("the hub says why it waits", || {
        hub.stderr_so_far().contains("warning: ")
    });
    // It keeps trying, saying nothing more: two more attempts after the one it warned of.
    let warned = door.attempts();
    ws.eventually("the hub tries twice more", || {
        door.attempts() >= warned + 2 || hub.exited()
    });
    assert!(!hub.exited(), "{}", hub.stderr_so_far());
    hub.signal(rustix::process::Signal::TERM);
    let out = hub.wait_within(crate::support::HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    no_password(&out);
    let masked = format!("postgres://hookq:***@127.0.0.1:{port}/hq?sslmode=disable");
    assert_eq!(
        out.warnings(),
        [format!(
            "warning: hub cannot reach the queue's database {masked} yet; \
             trying again with backoff: queue {}: cannot connect to {masked}: connection closed",
            ws.root().file_name().unwrap().to_str().unwrap()
        )],
        "{}",
        out.describe()
    );
    assert_eq!(sqlite_pending(&ws), 0);
}

/// A TCP port on 127.0.0.1 that accepts each connection and closes it once the client has
/// spoken, counting them:
/// a database that cannot be reached, whose every attempt the test sees.
struct ClosingDoor {
    port: u16,
    attempts: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    closing: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ClosingDoor {
    fn open() -> ClosingDoor {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let attempts = std::sync::Arc::new(AtomicUsize::new(0));
        let closing = std::sync::Arc::new(AtomicBool::new(false));
        let thread = std::thread::spawn({
            let (attempts, closing) = (attempts.clone(), closing.clone());
            move || {
                for stream in listener.incoming() {
                    if closing.load(Ordering::SeqCst) {
                        return;
                    }
                    // The client's first message read before the close, so that it ends
                    // with a clean end of stream (a close with it unread would be a reset).
                    if let Ok(mut stream) = stream {
                        use std::io::Read as _;
                        let _ = stream.set_read_timeout(Some(crate::support::HANG));
                        let _ = stream.read(&mut [0; 1024]);
                    }
                    attempts.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        ClosingDoor {
            port,
            attempts,
            closing,
            thread: Some(thread),
        }
    }

    fn port(&self) -> u16 {
        self.port
    }

    /// How many connections it has accepted and closed.
    fn attempts(&self) -> usize {
        self.attempts.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for ClosingDoor {
    /// Ends the accepting thread: one last connection of its own wakes it to see it should.
    fn drop(&mut self) {
        self.closing
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A command someone waits for does not hang on a row lock a host's transaction keeps: after
/// the lock timeout a runner's connection has, `task move` of that task fails with one line, and
/// the host's transaction commits as it would have.
#[test]
fn a_task_move_behind_a_hosts_open_transaction_gives_up_with_an_error() {
    if crate::postgres::without_postgres(
        "a_task_move_behind_a_hosts_open_transaction_gives_up_with_an_error",
    ) {
        return;
    }
    let (ws, _db, url) = pg_workspace();
    ws.task_add("t1", "p", "todo.ready").ok();
    let mut host = open(&url, "q");
    let q = host.queue().clone();
    let mut tx = host.client().transaction().unwrap();
    tx.execute(
        "SELECT 1 FROM hookq_tasks WHERE queue = $1 AND id = 't1' FOR UPDATE",
        &[&q.as_str()],
    )
    .unwrap();
    // The lock timeout is 30 s; the bound only catches a command that waits for ever.
    let out = ws.hookq_within(
        &["task", "move", "t1", "failed.x"],
        &[],
        std::time::Duration::from_secs(120),
    );
    assert_ne!(out.code(), Some(0), "{}", out.describe());
    assert!(
        out.stderr().starts_with("error: ") && out.stderr().contains("lock timeout"),
        "{}",
        out.describe()
    );
    no_password(&out);
    tx.commit().unwrap();
    let moved = ws
        .hookq(&["task", "move", "t1", "failed.x", "--no-run"])
        .ok();
    assert!(moved.stdout().contains("failed.x"), "{}", moved.describe());
}

/// As on SQLite: a move into `done.merged` without a sha reads the target branch's head, a
/// given sha wins, and a head that cannot be read leaves one warning line and no variable.
#[test]
fn a_merge_without_a_sha_gets_the_target_branch_head() {
    if crate::postgres::without_postgres("a_merge_without_a_sha_gets_the_target_branch_head") {
        return;
    }
    let (ws, _db, url) = pg_workspace_with(&Config::default(), "");
    crate::support::merged::target_head_cases(&ws, &|cfg| {
        ws.write_config_text(pg_config(cfg, &url, "q", "").as_bytes());
    });
    assert_eq!(sqlite_pending(&ws), 0, "nothing went into arc.db");
}

/// A stored value hookq would never write (an outcome put there by hand-written SQL) is refused
/// where it is read, as the row's error naming the value: not shown, and never a panic.
#[test]
fn a_stored_value_hookq_would_never_write_is_refused_where_read() {
    if crate::postgres::without_postgres(
        "a_stored_value_hookq_would_never_write_is_refused_where_read",
    ) {
        return;
    }
    let (ws, _db, url) = pg_workspace_with(&Config::hooks("after_fail = ['true']\n"), "");
    let mut q = ws.queue();
    let mut s = hookq::queue::pg::PgStore::open(
        &hookq::queue::pg::Target::parse(&url).unwrap(),
        hookq::queue::pg::QueueName::new("q").unwrap(),
    )
    .unwrap();
    s.client()
        .execute(
            "INSERT INTO hookq_hook_history (queue, occurrence, task, point, state, recorded_ms,
             passes, outcome, finished_ms)
             VALUES ('q', 100, 't1', 'after_fail', 'failed.x', 0, 1, '<i>outcome</i>', 0)",
            &[],
        )
        .unwrap();
    let err = q
        .history(&hookq::queue::model::HistoryFilter {
            limit: 10,
            ..Default::default()
        })
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("stored value is not valid: unknown outcome \"<i>outcome</i>\""),
        "{err}"
    );
    assert!(q.stats().is_ok(), "the counts do not parse outcomes");
}
