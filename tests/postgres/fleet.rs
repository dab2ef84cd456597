//! One `hookq hub` draining a SQLite and a PostgreSQL workspace together, and a second hub over
//! the same workspaces standing by for the PostgreSQL queue's runner lock; three queues of one
//! database on one listening connection; and one database of several going away and coming
//! back while the other queues drain.

use crate::postgres::cli::pg_workspace_with;
use crate::support::HANG;
use crate::support::queue::{Config, Running, Ws};
use rustix::process::Signal;

/// Waits until `hub` says `ready, 2 queues attached`.
fn wait_ready(ws: &Ws, hub: &mut Running) {
    ws.eventually("the hub to say both queues are attached", || {
        assert!(!hub.exited(), "the hub exited: {}", hub.stderr_so_far());
        hub.stdout_so_far()
            .lines()
            .any(|l| l == "hookq hub: ready, 2 queues attached")
    });
}

#[test]
fn one_hub_drains_sqlite_and_postgres_queues_and_a_standby_takes_over() {
    if crate::postgres::without_postgres(
        "one_hub_drains_sqlite_and_postgres_queues_and_a_standby_takes_over",
    ) {
        return;
    }
    let hooks = r#"after_fail = ['echo "$ARC_TASK" >> ran']"#;
    let (pg, _db, _url) = pg_workspace_with(&Config::hooks(hooks), "");
    let lite = Ws::init();
    lite.write_config(hooks);
    let file = lite.base().join("workspaces");
    std::fs::write(
        &file,
        format!("{}\n{}\n", pg.root().display(), lite.root().display()),
    )
    .unwrap();
    let args = ["hub", "--workspaces", file.to_str().unwrap()];
    let mut first = lite.spawn_env(&args, &[("HOOKQ_LOG", "info")]);
    wait_ready(&lite, &mut first);
    // The standby attaches the SQLite queue, and waits for the PostgreSQL queue's lock.
    let mut standby = lite.spawn_env(&args, &[("HOOKQ_LOG", "info")]);

    pg.task_add("p1", "p", "failed.x").ok();
    lite.task_add("l1", "p", "failed.x").ok();
    pg.eventually("the PostgreSQL queue to drain", || {
        pg.lines("ran") == ["p1"]
    });
    lite.eventually("the SQLite queue to drain", || lite.lines("ran") == ["l1"]);
    assert!(
        !standby.stdout_so_far().contains("ready"),
        "the standby cannot hold the lock the first hub holds: {}",
        standby.stdout_so_far()
    );

    first.signal(Signal::TERM);
    let out = first.wait_within(HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    wait_ready(&pg, &mut standby);
    pg.task_add("p2", "p", "failed.x").ok();
    pg.eventually("the standby to drain the PostgreSQL queue", || {
        pg.lines("ran") == ["p1", "p2"]
    });

    standby.signal(Signal::TERM);
    let out = standby.wait_within(HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert!(!out.stderr().contains("error:"), "{}", out.describe());
}

/// One hub over three workspaces whose queues share one PostgreSQL database listens for all
/// three on one connection (its listener's), and drains each on its commits.
#[test]
fn one_hub_of_three_postgres_queues_listens_on_one_connection() {
    if crate::postgres::without_postgres(
        "one_hub_of_three_postgres_queues_listens_on_one_connection",
    ) {
        return;
    }
    use std::os::unix::fs::PermissionsExt;

    use crate::postgres::cli::{open, pg_config};
    use crate::postgres::cluster::cluster;

    let hooks = r#"after_fail = ['echo "$ARC_TASK" >> ran']"#;
    let db = cluster().database();
    let url = cluster().url(&db, "");
    let spaces: Vec<Ws> = ["a", "b", "c"]
        .iter()
        .map(|queue| {
            let ws = Ws::init();
            ws.write_config_text(pg_config(&Config::hooks(hooks), &url, queue, "").as_bytes());
            std::fs::set_permissions(ws.config_path(), std::fs::Permissions::from_mode(0o600))
                .unwrap();
            ws
        })
        .collect();
    let file = spaces[0].base().join("workspaces");
    let listing: String = spaces
        .iter()
        .map(|ws| format!("{}\n", ws.root().display()))
        .collect();
    std::fs::write(&file, listing).unwrap();
    let mut hub = spaces[0].spawn(&["hub", "--workspaces", file.to_str().unwrap()]);
    spaces[0].eventually("the hub to attach the three queues", || {
        assert!(!hub.exited(), "the hub exited: {}", hub.stderr_so_far());
        hub.stdout_so_far()
            .lines()
            .any(|l| l == "hookq hub: ready, 3 queues attached")
    });
    // Each queue's watcher is made before the hub says it attached it.
    let mut watch = open(&url, "a");
    let listening: i64 = watch
        .client()
        .query_one(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND application_name LIKE $1",
            &[&format!(
                "{} pid {}%",
                hookq::testing::listener::APPLICATION_NAME,
                hub.pid()
            )],
        )
        .unwrap()
        .get(0);
    assert_eq!(listening, 1, "the hub's listening connections");

    for (ws, task) in spaces.iter().zip(["ta", "tb", "tc"]) {
        ws.task_add(task, "p", "failed.x").ok();
        ws.eventually("the queue to drain", || ws.lines("ran") == [task]);
    }
    hub.signal(Signal::TERM);
    let out = hub.wait_within(HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
}

/// The pid of the connection to `db` that the hub `hub` names `role` (`hookq runner`, `hookq
/// listener`), when it has one.
fn backend(db: &str, role: &str, hub: &Running) -> Option<i32> {
    use crate::postgres::cluster::cluster;
    cluster()
        .admin(db)
        .query_opt(
            "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name LIKE $2",
            &[&db, &format!("{role} pid {}%", hub.pid())],
        )
        .unwrap()
        .map(|r| r.get(0))
}

/// One hub over two PostgreSQL workspaces whose queues (both named `q`) live in two databases
/// of one server, and a SQLite workspace. One database goes away while the hub runs, twice:
/// first it refuses connections and the server ends those it had (its data kept) while one of
/// its hooks runs, then it is dropped and made again, empty. Each time the hub says so on a
/// line naming that workspace and database (once the hook it was running ended) and goes on;
/// the other two queues drain meanwhile, the PostgreSQL one on the very lock session and
/// listener it had (a process shares those per connection string, so each database has its
/// own); and once the database is back its queue is attached again: the point whose run lost
/// its lock runs again, the one waiting behind it runs, and so does one recorded after.
#[test]
fn one_database_of_a_hub_goes_away_while_the_others_drain() {
    if crate::postgres::without_postgres("one_database_of_a_hub_goes_away_while_the_others_drain") {
        return;
    }
    use crate::postgres::cluster::cluster;

    // A's hook waits for `go` in its workspace before it ends.
    let gated = r#"after_fail = ['echo "$ARC_TASK $ARC_STATE start" >> ran; n=0; while [ ! -e go ] && [ $n -lt 3000 ]; do sleep 0.05; n=$((n+1)); done; echo "$ARC_TASK $ARC_STATE end" >> ran']"#;
    let plain = r#"after_fail = ['echo "$ARC_TASK" >> ran']"#;
    let (a, db_a, _) = pg_workspace_with(&Config::hooks(gated), "");
    let (b, db_b, _) = pg_workspace_with(&Config::hooks(plain), "");
    let lite = Ws::init();
    lite.write_config(plain);
    let root = |ws: &Ws| ws.root().to_str().unwrap().to_owned();
    let (ra, rb, rl) = (root(&a), root(&b), root(&lite));
    // Two job slots: one for A's waiting hook, one for the others.
    let args = ["hub", "--jobs", "2", "-C", &ra, "-C", &rb, "-C", &rl];
    let mut hub = lite.spawn_env(&args, &[("HOOKQ_LOG", "info")]);
    lite.eventually("the hub to attach the three queues", || {
        assert!(!hub.exited(), "the hub exited: {}", hub.stderr_so_far());
        hub.stdout_so_far()
            .lines()
            .any(|l| l == "hookq hub: ready, 3 queues attached")
    });
    let b_conns = |hub: &Running| {
        (
            backend(&db_b, "hookq runner", hub),
            backend(&db_b, hookq::testing::listener::APPLICATION_NAME, hub),
        )
    };
    let b_before = b_conns(&hub);
    assert!(
        b_before.0.is_some() && b_before.1.is_some(),
        "B's lock session and listener: {b_before:?}"
    );
    // A's lines of the hub's stderr that start with `says`, and the times A was attached.
    let a_lines = |hub: &Running, says: &str| -> Vec<String> {
        let prefix = format!("hookq hub: {ra}: {says}");
        hub.stderr_so_far()
            .lines()
            .filter(|l| l.starts_with(&prefix))
            .map(str::to_owned)
            .collect()
    };
    let a_attached = |hub: &Running| {
        let attached = format!("{ra}: attached");
        hub.stderr_so_far()
            .lines()
            .filter(|l| l.ends_with(&attached))
            .count()
    };
    let drained = |task: &str, n: usize| {
        for ws in [&b, &lite] {
            ws.task_add(&format!("{task}{n}"), "p", "failed.x").ok();
        }
        for ws in [&b, &lite] {
            ws.eventually("the other queues to drain", || {
                ws.lines("ran").last().map(String::as_str) == Some(&format!("{task}{n}"))
            });
        }
    };
    drained("before", 0);
    assert_eq!(a_attached(&hub), 1, "{}", hub.stderr_so_far());

    // A's point runs its hook, and a second point of the task waits behind it.
    a.task_add("a1", "p", "failed.x").ok();
    a.eventually("A's hook to start", || {
        a.lines("ran") == ["a1 failed.x start"]
    });
    a.hookq(&["task", "move", "a1", "failed.y"]).ok();

    // A's database refuses connections, and the server ends those it had.
    let mut admin = cluster().admin("postgres");
    admin
        .batch_execute(&format!("ALTER DATABASE {db_a} ALLOW_CONNECTIONS false"))
        .unwrap();
    admin
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1",
            &[&db_a],
        )
        .unwrap();
    // The others drain while A's hook still waits.
    drained("during", 1);
    assert_eq!(a.lines("ran"), ["a1 failed.x start"]);
    std::fs::write(a.root().join("go"), "").unwrap();
    let refused = format!("database \"{db_a}\" is not currently accepting connections");
    lite.eventually("the hub to say A's database refuses it, naming it", || {
        assert!(!hub.exited(), "the hub exited: {}", hub.stderr_so_far());
        a_lines(&hub, "error: ").iter().any(|l| {
            l.contains(&format!("/{db_a}"))
                && l.contains(&refused)
                && l.contains("(trying again in ")
        })
    });
    drained("during", 2);
    assert_eq!(
        b_conns(&hub),
        b_before,
        "B's connections were ended with A's"
    );

    // Back with its data: the point cut off runs again, then the one behind it.
    admin
        .batch_execute(&format!("ALTER DATABASE {db_a} ALLOW_CONNECTIONS true"))
        .unwrap();
    let attached = a_attached(&hub);
    lite.eventually("A to be attached again", || a_attached(&hub) > attached);
    a.eventually("A's points to run", || a.pending().is_empty());
    let ran = a.lines("ran");
    let starts = |state: &str| {
        ran.iter()
            .filter(|l| **l == format!("a1 {state} start"))
            .count()
    };
    assert_eq!(
        (starts("failed.x"), starts("failed.y")),
        (2, 1),
        "the point cut off runs again: {ran:?}"
    );
    assert_eq!(
        ran.last().map(String::as_str),
        Some("a1 failed.y end"),
        "{ran:?}"
    );
    a.task_add("a2", "p", "failed.x").ok();
    a.eventually("a point recorded after to run", || {
        a.lines("ran").last().map(String::as_str) == Some("a2 failed.x end")
    });

    // Dropped (which ends its connections), then made again, empty.
    let errors = a_lines(&hub, "error: ").len();
    admin
        .batch_execute(&format!("DROP DATABASE {db_a} WITH (FORCE)"))
        .unwrap();
    let missing = format!("database \"{db_a}\" does not exist");
    lite.eventually("the hub to say A's database is gone, naming it", || {
        assert!(!hub.exited(), "the hub exited: {}", hub.stderr_so_far());
        a_lines(&hub, "error: ")[errors..]
            .iter()
            .any(|l| l.contains(&format!("/{db_a}")) && l.contains(&missing))
    });
    drained("dropped", 3);
    assert_eq!(
        b_conns(&hub),
        b_before,
        "B's connections were ended with A's"
    );
    admin
        .batch_execute(&format!("CREATE DATABASE {db_a} OWNER hookq"))
        .unwrap();
    let attached = a_attached(&hub);
    lite.eventually("A to be attached again", || a_attached(&hub) > attached);
    a.task_add("a3", "p", "failed.x").ok();
    a.eventually("a point recorded in the new database to run", || {
        a.lines("ran").last().map(String::as_str) == Some("a3 failed.x end")
    });
    drained("after", 4);
    assert_eq!(
        b_conns(&hub),
        b_before,
        "B's connections were ended with A's"
    );

    hub.signal(Signal::TERM);
    let out = hub.wait_within(HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    for ws in [&b, &lite] {
        assert!(
            !out.stderr()
                .contains(&format!("{}: error", ws.root().display())),
            "{}",
            out.describe()
        );
    }
}
