//! Faults against the real server, through the real binary: two hubs on one queue (two
//! workspaces standing for two hosts), a hub killed with SIGKILL mid-hook, the holder's
//! connection ended by the server.

use std::path::Path;
use std::time::{Duration, Instant};

use hookq::queue::pg::{PgStore, QueueName, Target, holder};

use crate::postgres::cluster::cluster;
use crate::support::queue::{Config, Running, Ws};

/// A workspace after `hookq init` whose queue is `q` in `url`'s database, with `hooks`.
pub(crate) fn host(url: &str, hooks: &str) -> Ws {
    let ws = Ws::init();
    let text = Config::hooks(hooks).text().replacen(
        "[queue]\n",
        &format!("[queue]\ndatabase = {url:?}\nname = \"q\"\n"),
        1,
    );
    ws.write_config_text(text.as_bytes());
    ws
}

/// An `after_fail` hook that appends `start <task> <ns>` and `end <task> <ns>` to `times`
/// around a sleep of `sleep` seconds.
fn timed_hook(times: &Path, sleep: &str) -> String {
    let t = times.display();
    format!(
        "after_fail = ['echo \"start $ARC_TASK $(date +%s%N)\" >> {t}; sleep {sleep}; echo \"end $ARC_TASK $(date +%s%N)\" >> {t}']\n"
    )
}

pub(crate) fn open(url: &str) -> PgStore {
    PgStore::open(&Target::parse(url).unwrap(), QueueName::new("q").unwrap()).unwrap()
}

pub(crate) fn pending_count(s: &mut PgStore) -> usize {
    s.pending(0, 100_000, None).unwrap().len()
}

/// `(event, task, ns)` of every line of `times`.
fn events(times: &Path) -> Vec<(String, String, u128)> {
    std::fs::read_to_string(times)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let mut w = l.split(' ');
            let (e, t, ns) = (w.next().unwrap(), w.next().unwrap(), w.next().unwrap());
            (e.to_owned(), t.to_owned(), ns.parse().unwrap())
        })
        .collect()
}

/// Every task `<prefix>0 .. <prefix>{tasks-1}` ran its command to its end (an `end` line in
/// `times`) and was cleared with an `ok` history row.
fn every_task_ran_and_was_cleared(s: &mut PgStore, times: &Path, prefix: &str, tasks: usize) {
    let ev = events(times);
    let history = s.history(None, None, 100_000).unwrap();
    for n in 0..tasks {
        let task = format!("{prefix}{n}");
        assert!(
            ev.iter().any(|(e, t, _)| e == "end" && *t == task),
            "{task} never ran to its end: {ev:?}"
        );
        assert!(
            history
                .iter()
                .any(|h| h.task == task.as_str() && h.outcome == "ok"),
            "{task} was not cleared as run"
        );
    }
}

fn hub(ws: &Ws) -> Running {
    ws.spawn_env(&["hub"], &[("HOOKQ_LOG", "info")])
}

/// Waits until `f` holds, failing with the hubs' stderr.
pub(crate) fn until(what: &str, hubs: &[&Running], mut f: impl FnMut() -> bool) {
    crate::support::poll(
        what,
        Duration::from_millis(10),
        || f().then_some(()),
        || {
            let errs: Vec<String> = hubs.iter().map(|h| h.stderr_so_far()).collect();
            format!("the hubs' stderr:\n{}", errs.join("\n---\n"))
        },
    );
}

/// A small pseudo-random sequence (xorshift), seeded from the clock and printed, for kill
/// delays.
struct Rng(u64);

impl Rng {
    fn new() -> Self {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
            | 1;
        println!("kill delays seeded with {seed}");
        Self(seed)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Two hubs on one queue, from two workspaces standing for two hosts, while both workspaces
/// record and run passes of their own: the hooks' start and end times never overlap (one runner
/// per queue), and every point runs exactly once.
#[test]
fn two_hubs_and_passes_on_one_queue_never_overlap_and_lose_nothing() {
    if crate::postgres::without_postgres(
        "two_hubs_and_passes_on_one_queue_never_overlap_and_lose_nothing",
    ) {
        return;
    }
    let db = cluster().database();
    let url = cluster().url(&db, "");
    let dir = tempfile::tempdir().unwrap();
    let times = dir.path().join("times");
    let hooks = timed_hook(&times, "0.02");
    let (a, b) = (host(&url, &hooks), host(&url, &hooks));
    let (hub_a, hub_b) = (hub(&a), hub(&b));
    let tasks = 40;
    for n in 0..tasks {
        let ws = if n % 2 == 0 { &a } else { &b };
        ws.task_add(&format!("t{n}"), "p", "failed.x").ok();
        if n % 5 == 0 {
            // A pass of its own: it drains when the lock is free, or says who holds it.
            let out = ws.hookq(&["run", "--wait", "0"]);
            assert!(matches!(out.code(), Some(0 | 6)), "{}", out.describe());
        }
    }
    let mut s = open(&url);
    until("every point ran and was cleared", &[&hub_a, &hub_b], || {
        events(&times).len() == 2 * tasks && pending_count(&mut s) == 0
    });

    let ev = events(&times);
    let mut runs: Vec<(u128, u128, String)> = Vec::new();
    for (e, task, ns) in &ev {
        if e == "start" {
            let end = ev
                .iter()
                .find(|(e2, t2, n2)| e2 == "end" && t2 == task && n2 >= ns)
                .unwrap_or_else(|| panic!("{task} started and never ended: {ev:?}"));
            runs.push((*ns, end.2, task.clone()));
        }
    }
    runs.sort();
    for w in runs.windows(2) {
        assert!(
            w[1].0 >= w[0].1,
            "{} started before {} ended: {runs:?}",
            w[1].2,
            w[0].2
        );
    }
    let mut ran: Vec<&str> = runs.iter().map(|r| r.2.as_str()).collect();
    ran.sort();
    let mut want: Vec<String> = (0..tasks).map(|n| format!("t{n}")).collect();
    want.sort();
    assert_eq!(ran, want, "every point once");
    for h in [hub_a, hub_b] {
        assert!(h.stderr_so_far().lines().all(|l| !l.starts_with("error:")));
    }
}

/// The hub of `hubs` whose process holds the queue's lock, if one does.
fn holding(s: &mut PgStore, hubs: &[Running; 2]) -> Option<usize> {
    let q = s.queue().clone();
    let pid = holder(s.client(), &q).unwrap()?.pid?;
    hubs.iter().position(|h| h.pid() as u32 == pid)
}

/// SIGKILL of the hub holding the queue's lock at a random moment while its hook runs, round
/// after round, with a second hub (another workspace, standing for another host) waiting: the
/// other hub takes the lock over, every point runs to its end at least once and is cleared
/// with an `ok` outcome, and none is left pending. Each round kills once and starts the killed
/// hub again; 50 rounds take a few seconds.
#[test]
fn killing_the_holding_hub_mid_hook_loses_no_point() {
    if crate::postgres::without_postgres("killing_the_holding_hub_mid_hook_loses_no_point") {
        return;
    }
    let db = cluster().database();
    let url = cluster().url(&db, "");
    let dir = tempfile::tempdir().unwrap();
    let times = dir.path().join("times");
    let hooks = timed_hook(&times, "0.03");
    let hosts = [host(&url, &hooks), host(&url, &hooks)];
    let mut hubs = [hub(&hosts[0]), hub(&hosts[1])];
    let mut s = open(&url);
    let mut rng = Rng::new();
    let rounds = 50;
    let started = Instant::now();
    let mut kills = 0;
    for r in 0..rounds {
        let task = format!("k{r}");
        hosts[r % 2].task_add(&task, "p", "failed.x").ok();
        until(
            &format!("{task}'s hook starts"),
            &[&hubs[0], &hubs[1]],
            || {
                events(&times)
                    .iter()
                    .any(|(e, t, _)| e == "start" && *t == task)
            },
        );
        // A random moment to kill the holder at: what the test varies, not a wait for anything.
        std::thread::sleep(Duration::from_millis(rng.below(40)));
        if let Some(i) = holding(&mut s, &hubs) {
            hubs[i].signal(rustix::process::Signal::KILL);
            let killed = std::mem::replace(&mut hubs[i], hub(&hosts[i]));
            drop(killed);
            kills += 1;
        }
    }
    until("every point is cleared", &[&hubs[0], &hubs[1]], || {
        pending_count(&mut s) == 0
    });
    println!("{rounds} rounds, {kills} kills in {:?}", started.elapsed());
    assert!(kills >= rounds / 2, "the hubs were killed {kills} times");
    every_task_ran_and_was_cleared(&mut s, &times, "k", rounds);
}

/// The server ends the lock holder's connection (`pg_terminate_backend` of the backend the
/// lock table names) three times mid-drain, with two hubs on the queue: both hubs live on, the
/// queue is finished, and every point ran to its end and was cleared with an `ok` outcome.
#[test]
fn ending_the_holders_connection_mid_drain_the_hubs_finish_the_queue() {
    if crate::postgres::without_postgres(
        "ending_the_holders_connection_mid_drain_the_hubs_finish_the_queue",
    ) {
        return;
    }
    let db = cluster().database();
    let url = cluster().url(&db, "");
    let dir = tempfile::tempdir().unwrap();
    let times = dir.path().join("times");
    let hooks = timed_hook(&times, "0.02");
    let hosts = [host(&url, &hooks), host(&url, &hooks)];
    let mut hubs = [hub(&hosts[0]), hub(&hosts[1])];
    let mut s = open(&url);
    let mut admin = cluster().admin(&db);
    let tasks = 30;
    let mut ended = 0;
    for n in 0..tasks {
        let task = format!("e{n}");
        hosts[n % 2].task_add(&task, "p", "failed.x").ok();
        if n % 10 == 9 {
            until(
                &format!("{task}'s hook starts"),
                &[&hubs[0], &hubs[1]],
                || {
                    events(&times)
                        .iter()
                        .any(|(e, t, _)| e == "start" && *t == task)
                },
            );
            let q = s.queue().clone();
            if let Some(h) = holder(s.client(), &q).unwrap() {
                let done: bool = admin
                    .query_one("SELECT pg_terminate_backend($1)", &[&h.backend_pid])
                    .unwrap()
                    .get(0);
                ended += usize::from(done);
            }
        }
    }
    until("every point is cleared", &[&hubs[0], &hubs[1]], || {
        pending_count(&mut s) == 0
    });
    assert!(
        ended >= 2,
        "the holder's connection was ended {ended} times"
    );
    every_task_ran_and_was_cleared(&mut s, &times, "e", tasks);
    for h in &mut hubs {
        assert!(!h.exited(), "a hub exited: {}", h.stderr_so_far());
    }
}

/// The error lines a user meets when the queue's database cannot be used, through the binary:
/// one `error:` line, a `hint:`, the database's exit code, and never the password.
#[test]
fn an_unusable_database_is_refused_in_one_line_with_a_hint() {
    if crate::postgres::without_postgres("an_unusable_database_is_refused_in_one_line_with_a_hint")
    {
        return;
    }
    use crate::postgres::cluster::PASSWORD;
    let c = cluster();
    let ws = Ws::init();
    let good_db = c.database();
    let good = c.url(&good_db, "");
    // A database the role may connect to but not make the schema in.
    let bare = {
        let name = format!("bare_{good_db}");
        c.admin("postgres")
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        c.url(&name, "")
    };
    let newer_db = c.database();
    let newer = c.url(&newer_db, "");
    drop(open(&newer));
    c.admin(&newer_db)
        .batch_execute(&format!(
            "INSERT INTO {} (version, name, applied_on, checksum) VALUES (999, 'future', '', '0')",
            hookq::queue::pg::schema::HISTORY_TABLE
        ))
        .unwrap();
    let cases = [
        (
            good.replace(PASSWORD, "not-the-Pa55word"),
            "password authentication failed",
            "check the user and password",
        ),
        (
            format!("postgres://hookq:{PASSWORD}@no-such-host.invalid/db?sslmode=disable"),
            "cannot connect to postgres://hookq:***@no-such-host.invalid/db",
            "check the host and port",
        ),
        (
            bare,
            "permission denied for schema public",
            "GRANT CREATE ON SCHEMA",
        ),
        (
            newer,
            "schema is version 999, newer than this hookq supports",
            "a newer hookq migrated this database",
        ),
    ];
    for (url, says, hint) in cases {
        let out = ws
            .hookq_env(
                &["task", "add", "t1", "--plan", "p", "--phase", "failed.x"],
                &[("HOOKQ_DATABASE_URL", &url)],
            )
            .expect_code(5);
        let err = out.stderr();
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 2, "{}", out.describe());
        assert!(
            lines[0].starts_with("error: queue ") && lines[0].contains(says),
            "{}",
            out.describe()
        );
        assert!(
            lines[1].starts_with("hint: ") && lines[1].contains(hint),
            "{}",
            out.describe()
        );
        assert!(
            !err.contains(PASSWORD) && !err.contains("not-the-Pa55word"),
            "{}",
            out.describe()
        );
        assert!(out.stdout().is_empty(), "{}", out.describe());
    }
    // The right database takes the same command.
    ws.hookq_env(
        &["task", "add", "t1", "--plan", "p", "--phase", "failed.x"],
        &[("HOOKQ_DATABASE_URL", &good)],
    )
    .ok();
    let mut s = PgStore::open(
        &Target::parse(&good).unwrap(),
        QueueName::new("ws").unwrap(),
    )
    .unwrap();
    assert_eq!(pending_count(&mut s), 1);
}

/// The server restarted (fast shutdown, started again on the same dir and port) mid-drain, on a
/// cluster of this test's own, with two hubs on the queue: the hubs connect again and finish the
/// queue, every point run to its end and cleared with an `ok` outcome. Then, with the server
/// down, `task move` fails in one `error:` line with the database's exit code and writes
/// nothing; once the server is back the same command succeeds.
#[test]
fn a_server_restart_mid_drain_and_a_server_down_during_task_move() {
    if crate::postgres::without_postgres(
        "a_server_restart_mid_drain_and_a_server_down_during_task_move",
    ) {
        return;
    }
    let c = crate::postgres::cluster::own_cluster();
    let db = c.database();
    let url = c.url(&db, "");
    let dir = tempfile::tempdir().unwrap();
    let times = dir.path().join("times");
    let hooks = format!(
        "{}after_rework = ['echo rework >> {}']\n",
        timed_hook(&times, "0.05"),
        dir.path().join("rework").display()
    );
    let hosts = [host(&url, &hooks), host(&url, &hooks)];
    let hubs = [hub(&hosts[0]), hub(&hosts[1])];
    let tasks = 20;
    for n in 0..tasks {
        hosts[n % 2]
            .task_add(&format!("r{n}"), "p", "failed.x")
            .ok();
    }
    until("the drain starts", &[&hubs[0], &hubs[1]], || {
        events(&times).len() >= 2
    });
    c.stop();
    c.start_again();
    let mut s = open(&url);
    until("every point is cleared", &[&hubs[0], &hubs[1]], || {
        pending_count(&mut s) == 0
    });
    every_task_ran_and_was_cleared(&mut s, &times, "r", tasks);
    // The hub that took the queue back may drain it all before the other, which waits for
    // the lock, has tried again and found its connection gone: each says so in its own time.
    until(
        "each hub to say it lost the database",
        &[&hubs[0], &hubs[1]],
        || {
            hubs.iter().all(|h| {
                h.stderr_so_far()
                    .contains("warning: hub lost the queue's database")
            })
        },
    );
    drop(hubs);
    drop(s);

    // The server down during `task move`.
    c.stop();
    let out = hosts[0]
        .hookq(&["task", "move", "r0", "review.rework_pending"])
        .expect_code(5);
    assert_eq!(out.errors().len(), 1, "{}", out.describe());
    assert!(
        out.stderr()
            .starts_with("error: queue q: cannot connect to"),
        "{}",
        out.describe()
    );
    assert!(!out.stderr().contains(crate::postgres::cluster::PASSWORD));
    c.start_again();
    let mut s = open(&url);
    assert_eq!(pending_count(&mut s), 0, "nothing half-written");
    let r0 = s.task("r0").unwrap().unwrap();
    assert_eq!(r0.phase, "failed.x", "nothing half-written");
    let out = hosts[0]
        .hookq(&["task", "move", "r0", "review.rework_pending"])
        .ok();
    assert!(
        out.stdout().contains("recorded after_rework"),
        "{}",
        out.describe()
    );
    assert_eq!(pending_count(&mut s), 0, "the move ran its point");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("rework")).unwrap(),
        "rework\n"
    );
    drop(s);

    // A hub started while the server is down says it cannot reach it yet (it never had it),
    // and drains once the server is back.
    c.stop();
    let mut late = hub(&hosts[0]);
    until("the hub says it waits", &[&late], || {
        late.stderr_so_far().contains("warning: ")
    });
    c.start_again();
    hosts[1].task_add("late", "p", "failed.x").ok();
    let mut s = open(&url);
    until("the late hub runs the point", &[&late], || {
        pending_count(&mut s) == 0
    });
    assert!(!late.exited(), "{}", late.stderr_so_far());
    late.signal(rustix::process::Signal::TERM);
    let out = late.wait_within(crate::support::HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    let warnings = out.warnings();
    assert_eq!(warnings.len(), 1, "{}", out.describe());
    assert!(
        warnings[0]
            .starts_with("warning: hub cannot reach the queue's database postgres://hookq:***@")
            && warnings[0].contains(" yet; trying again with backoff: "),
        "{}",
        out.describe()
    );
}
