//! Figures Q1 and Q2: many PostgreSQL queues on one server. Q1, one `hookq hub` serving
//! hundreds of queues: the connections it holds, the server's CPU while all is idle, the hub's
//! memory, and commit -> hook start on a queue picked at random while eight writers record on
//! eight others. Q2, what the listeners of other queues cost a queue's writers: their rate
//! beside idle single-queue hubs (the measurement of P6c), and the server's CPU per commit
//! beside one hub of a thousand queues against the same server with one queue.
//!
//! Each queue holds a few connections of the hub, so these figures run on a server of their
//! own that takes [`max_connections`] of them.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hookq::queue::MoveFacts;
use hookq::queue::pg::record::move_task;
use hookq::queue::pg::{DATABASE_ENV, PgStore, QueueName, Target, notify_hubs};
use hookq::{Phase, TaskId};

use super::super::fleet::{process_cpu, seen_hook, start_fleet, stop};
use super::super::hub::{LOST, Lcg, Seen, early_note, latency_ms, now_ns};
use super::super::proc::{self, tree_cpu, tree_cpu_spent};
use super::super::report::{Row, Target as Bound};
use super::super::sizes::{Mode, Sizes};
use super::super::stats::{median, ms, percentile};
use super::writers::{self, CONNECTIONS, Writer};
use super::{Server, fixture};

/// Queues of Q1 that writers record on while the latency is timed on the others.
pub const WRITERS: usize = 8;
/// How often each of Q1's writers records: a steady load, not a saturating one.
const WRITER_PACE: Duration = Duration::from_millis(20);
/// Tasks each of Q1's writers cycles through.
const WRITER_TASKS: usize = 16;

/// The connections the figures' server takes: room for today's hub of many queues, a few
/// connections a queue, with P6c's idle hubs and the bench's own.
pub fn max_connections(sizes: &Sizes) -> usize {
    4 * sizes.fleet_pg_queues.max(sizes.fleet_listeners) + 300
}

/// What Q1 and Q2 measured.
pub struct PgFleet {
    /// Q1's queues.
    pub queues: usize,
    /// Connections the hub held once ready.
    pub connections: i64,
    /// The server's CPU while the hub of `queues` queues idled, % of one core, and the hub's.
    pub idle_server_cpu: f64,
    pub idle_hub_cpu: f64,
    /// The idle window, seconds.
    pub idle_secs: f64,
    /// The hub's VmRSS and VmHWM after the latency run, KiB.
    pub rss_kib: (u64, u64),
    /// Commit-to-hook-start latencies, ms, each on a queue picked at random.
    pub latencies: Vec<f64>,
    /// Of those, how many never started within [`LOST`].
    pub lost: usize,
    /// Commits Q1's writers made meanwhile.
    pub writer_commits: u64,
    /// Q2a, P6c's measurement: ms per transition alone and beside the idle hubs, and how many.
    pub p6c: Option<(f64, f64)>,
    pub idle_hubs: usize,
    /// Q2b: queues whose listeners the one hub held.
    pub listeners: usize,
    /// Server CPU per commit, us, medians over rounds: with one queue (before the hub started
    /// and after it stopped) and beside the hub's listeners.
    pub alone_us: f64,
    pub beside_us: f64,
    /// Rounds each way, commits a round.
    pub rounds: usize,
    pub round_commits: usize,
}

/// Measures Q1 and Q2b on a server of their own in `dir`, and Q2a too unless `p6c` gives it
/// from P6c in the same run.
pub fn measure(dir: &Path, sizes: &Sizes, p6c: Option<(f64, f64)>, step: &dyn Fn(&str)) -> PgFleet {
    raise_open_files();
    step("Q: a durable PostgreSQL taking a hub of many queues' connections");
    let server = Server::start_sized(dir, max_connections(sizes));
    let p6c = p6c.or_else(|| {
        step("Q2a: P6's writers beside idle hubs of other queues (as P6c)");
        let url = server.database();
        writers::setup(&url, sizes);
        server.checkpoint();
        Some(writers::beside_idle_hubs(&url, dir, sizes))
    });
    step("Q1: one hub of many PostgreSQL queues");
    let mut fleet = one_hub(&server, dir, sizes);
    fleet.p6c = p6c;
    fleet.idle_hubs = writers::idle_hubs(sizes);
    step("Q2b: the server's CPU per commit beside one hub of many queues' listeners");
    listeners(&server, dir, sizes, &mut fleet);
    fleet
}

/// A hub of many queues holds a few descriptors a queue: the soft limit raised to the hard one
/// for it (the hub inherits it), as a service manager would set it.
fn raise_open_files() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        limit.current = limit.maximum;
        let _ = setrlimit(Resource::Nofile, limit);
    }
}

/// A workspace at `dir/name` on queue `queue` whose `after_awaiting_human` point runs `hook`
/// (none: its points are cleared as a pass reaches them), its config written long ago.
fn workspace(dir: &Path, name: &str, queue: &str, hook: Option<&str>) -> PathBuf {
    let root = dir.join(name);
    let ws = hookq::Workspace::at(&root);
    std::fs::create_dir_all(ws.state_dir()).expect("create the state dir");
    let hooks = hook.map_or(String::new(), |h| {
        format!(
            "\n[hooks]\nafter_awaiting_human = [{}]\n",
            hookq::queue::config::toml_quote(h)
        )
    });
    std::fs::write(
        ws.config_path(),
        format!("[queue]\nname = {queue:?}\n{hooks}"),
    )
    .expect("write config.toml");
    // As a config written long ago: points without commands are cleared only by a config
    // that has gone a few seconds without a write.
    std::fs::File::options()
        .write(true)
        .open(ws.config_path())
        .and_then(|f| f.set_modified(std::time::SystemTime::now() - Duration::from_secs(60)))
        .expect("set config.toml's modification time");
    root
}

/// Creates the queues `<prefix>0 .. <prefix>{n-1}`, and in each the tasks `tasks` names for
/// it, in `phase`.
fn add_queues(url: &str, prefix: &str, n: usize, tasks: &[(usize, String)], phase: &str) {
    let mut c = fixture::client(url);
    let mut tx = c.transaction().expect("begin");
    tx.execute("SET LOCAL synchronous_commit = off", &[])
        .expect("bulk setup");
    tx.execute(
        "INSERT INTO hookq_queues (queue, created_ms)
         SELECT $1 || q, 0 FROM generate_series(0, $2::bigint - 1) AS q
         ON CONFLICT (queue) DO NOTHING",
        &[&prefix, &(n as i64)],
    )
    .expect("insert queues");
    let queues: Vec<String> = tasks.iter().map(|(q, _)| format!("{prefix}{q}")).collect();
    let ids: Vec<&str> = tasks.iter().map(|(_, t)| t.as_str()).collect();
    tx.execute(
        "INSERT INTO hookq_tasks (queue, id, plan, phase, created_ms, updated_ms)
         SELECT q, t, 'p1', $3, 0, 0 FROM unnest($1::text[], $2::text[]) AS u(q, t)",
        &[&queues, &ids, &phase],
    )
    .expect("insert tasks");
    tx.commit().expect("commit the queues");
    c.batch_execute("VACUUM (ANALYZE) hookq_queues, hookq_tasks")
        .expect("vacuum");
}

/// How many of the server's connections belong to process `pid`: every connection hookq opens
/// names its process in its `application_name` (`hookq pid N on HOST`, `hookq runner pid N
/// on HOST`, `hookq notifier pid N`).
fn connections_of(url: &str, pid: u32) -> i64 {
    fixture::client(url)
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name ~ ('pid ' || $1 || '( |$)')",
            &[&pid.to_string()],
        )
        .expect("read pg_stat_activity")
        .get(0)
}

/// Q1.
fn one_hub(server: &Server, dir: &Path, sizes: &Sizes) -> PgFleet {
    let n = sizes.fleet_pg_queues.max(WRITERS + 1);
    let commits = sizes.fleet_commits;
    let url = server.database();
    drop(fixture::open(&url));
    let seen_path = dir.join("q1-seen.log");
    std::fs::write(&seen_path, "").expect("create q1-seen.log");
    let hook = seen_hook(&seen_path);
    let mut rng = Lcg(0x0b1e);
    // Queues 0-7 are the writers', the others each a queue the latency may be timed on.
    let picks: Vec<usize> = (0..commits)
        .map(|_| WRITERS + rng.below((n - WRITERS) as u64) as usize)
        .collect();
    let task = |j: usize| format!("t{j:07}");
    let mut tasks: Vec<(usize, String)> = picks
        .iter()
        .enumerate()
        .map(|(j, &q)| (q, task(j)))
        .collect();
    tasks.push((WRITERS, task(commits)));
    add_queues(&url, "fq-", n, &tasks, "running.gate");
    let writer_tasks: Vec<(usize, String)> = (0..WRITERS)
        .flat_map(|c| (0..WRITER_TASKS).map(move |i| (c, format!("w{i:07}"))))
        .collect();
    add_queues(&url, "fq-", n, &writer_tasks, "todo.ready");
    server.checkpoint();
    let roots: Vec<PathBuf> = (0..n)
        .map(|q| {
            let hook = (q >= WRITERS).then_some(hook.as_str());
            workspace(dir, &format!("q1-{q}"), &format!("fq-{q}"), hook)
        })
        .collect();
    let mut child = start_fleet(dir, "q1-hub", &roots, &[], &[(DATABASE_ENV, url.as_str())]);
    let pid = child.id();
    let target = Target::parse(&url).expect("a bench URL");
    let mut client = fixture::client(&url);
    let awaiting = Phase::new("review.awaiting_human").expect("phase");
    let mut commit = |q: usize, j: usize| -> i128 {
        let queue = QueueName::new(format!("fq-{q}")).expect("a queue name");
        let id = TaskId::new(task(j)).expect("id");
        let mut tx = client.transaction().expect("begin");
        move_task(&mut tx, &queue, &id, &awaiting, &MoveFacts::default()).expect("record");
        tx.commit().expect("commit");
        let at = now_ns();
        notify_hubs(&mut client, &queue).expect("notify the queue's hubs");
        at
    };
    let mut seen = Seen::new(&seen_path);
    // A first transition, untimed: the hub runs hooks once it has run this one.
    commit(WRITERS, commits);
    seen.wait_for(&task(commits), Duration::from_secs(60))
        .expect("the hub ran its first hook (see q1-hub.stderr in the bench dir)");
    std::thread::sleep(Duration::from_secs(1));
    let connections = connections_of(&url, pid);

    // All idle: the server's processes and the hub watched.
    let (server_before, hub_before, t0) =
        (tree_cpu(server.pid()), process_cpu(pid), Instant::now());
    std::thread::sleep(sizes.fleet_idle);
    let (server_after, hub_after) = (tree_cpu(server.pid()), process_cpu(pid));
    let idle_secs = t0.elapsed().as_secs_f64();
    let idle_server_cpu = tree_cpu_spent(&server_before, &server_after) / idle_secs * 100.0;
    let idle_hub_cpu = (hub_after.0.unwrap_or(hub_after.1) - hub_before.0.unwrap_or(hub_before.1))
        / idle_secs
        * 100.0;

    // The latency, on queues picked at random, while eight writers record on eight others.
    let stop_writers = AtomicBool::new(false);
    let (latencies, lost, writer_commits) = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|c| {
                let (target, stop_writers) = (&target, &stop_writers);
                scope.spawn(move || {
                    let queue = QueueName::new(format!("fq-{c}")).expect("a queue name");
                    let mut store = PgStore::open(target, queue).expect("open a writer's queue");
                    let phases = [
                        Phase::new("failed.a").expect("phase"),
                        Phase::new("failed.b").expect("phase"),
                    ];
                    let mut i = 0u64;
                    while !stop_writers.load(Ordering::Relaxed) {
                        let id =
                            TaskId::new(format!("w{:07}", i as usize % WRITER_TASKS)).expect("id");
                        let to = &phases[(i as usize / WRITER_TASKS) % 2];
                        store
                            .write(|tx, q| move_task(tx, q, &id, to, &MoveFacts::default()))
                            .expect("a writer's recording");
                        i += 1;
                        std::thread::sleep(WRITER_PACE);
                    }
                    i
                })
            })
            .collect();
        let (mut latencies, mut lost) = (Vec::with_capacity(commits), 0);
        for (j, &q) in picks.iter().enumerate() {
            std::thread::sleep(Duration::from_millis(rng.below(50)));
            let at = commit(q, j);
            match seen.wait_for(&task(j), LOST) {
                Some(hook_ns) => latencies.push(latency_ms(hook_ns, at)),
                None => {
                    lost += 1;
                    latencies.push(ms(LOST));
                }
            }
        }
        stop_writers.store(true, Ordering::Relaxed);
        let writer_commits = writers
            .into_iter()
            .map(|w| w.join().expect("a writer"))
            .sum();
        (latencies, lost, writer_commits)
    });
    let rss_kib = (
        proc::status_kib(pid, "VmRSS"),
        proc::status_kib(pid, "VmHWM"),
    );
    stop(&mut child);
    PgFleet {
        queues: n,
        connections,
        idle_server_cpu,
        idle_hub_cpu,
        idle_secs,
        rss_kib,
        latencies,
        lost,
        writer_commits,
        p6c: None,
        idle_hubs: 0,
        listeners: 0,
        alone_us: 0.0,
        beside_us: 0.0,
        rounds: 0,
        round_commits: 0,
    }
}

/// Q2b: P6's writers on one queue, the server's CPU per commit, with one queue on the server
/// (rounds before one hub of `sizes.fleet_listeners` other queues starts and after it stops)
/// and beside that hub's listeners.
fn listeners(server: &Server, dir: &Path, sizes: &Sizes, fleet: &mut PgFleet) {
    let n = sizes.fleet_listeners;
    let url = server.database();
    writers::setup(&url, sizes);
    add_queues(&url, "fl-", n, &[], "todo.ready");
    server.checkpoint();
    let per_connection = writers::per_connection(sizes);
    let rounds = if sizes.mode == Mode::Full { 3 } else { 1 };
    let cpu_round = || -> f64 {
        let before = tree_cpu(server.pid());
        writers::round(&url, per_connection, Writer::Notifier);
        let spent = tree_cpu_spent(&before, &tree_cpu(server.pid()));
        spent * 1e6 / (CONNECTIONS * per_connection) as f64
    };
    let mut alone: Vec<f64> = (0..rounds).map(|_| cpu_round()).collect();
    let roots: Vec<PathBuf> = (0..n)
        .map(|q| workspace(dir, &format!("q2-{q}"), &format!("fl-{q}"), None))
        .collect();
    let mut child: Child = start_fleet(dir, "q2-hub", &roots, &[], &[(DATABASE_ENV, url.as_str())]);
    // Past its first passes: every queue's watcher waits on LISTEN.
    std::thread::sleep(Duration::from_secs(2));
    let beside: Vec<f64> = (0..rounds).map(|_| cpu_round()).collect();
    stop(&mut child);
    alone.extend((0..rounds).map(|_| cpu_round()));
    fleet.listeners = n;
    fleet.alone_us = median(&alone);
    fleet.beside_us = median(&beside);
    fleet.rounds = rounds;
    fleet.round_commits = CONNECTIONS * per_connection;
}

/// Rows Q1a-Q1e, Q2a and Q2b.
pub fn rows(f: &PgFleet) -> Vec<Row> {
    let mib = |k: u64| k as f64 / 1024.0;
    let lost = if f.lost > 0 {
        format!("; {} LOST (counted as {} ms)", f.lost, ms(LOST))
    } else {
        String::new()
    };
    let mut rows = vec![
        Row::new(
            "Q1a",
            format!("fleet: PostgreSQL connections held by one hub of {} queues", f.queues),
            f.connections as f64,
            "conns",
        )
        .target(Bound::value_at_most(4.0))
        .note("counted in pg_stat_activity by the hub's pid, which every connection of hookq names in its application_name, once the hub ran its first hook"),
        Row::new(
            "Q1b",
            format!("fleet: PostgreSQL server CPU while one hub of {} queues idles", f.queues),
            f.idle_server_cpu,
            "% core",
        )
        .target(Bound::value_at_most(1.0))
        .note(format!(
            "every server process's CPU time from /proc over {:.1} s, nothing committed; the hub itself spent {:.2} % of a core",
            f.idle_secs, f.idle_hub_cpu
        )),
        Row::new(
            "Q1c",
            format!("fleet: RSS of one hub of {} PostgreSQL queues (VmRSS)", f.queues),
            mib(f.rss_kib.0),
            "MiB",
        )
        .target(Bound::value_at_most(64.0))
        .note(format!("after the latency run; VmHWM {:.1} MiB", mib(f.rss_kib.1))),
        Row::new(
            "Q1d",
            format!("fleet: commit -> hook start p50, one of {} PostgreSQL queues, 8 writing", f.queues),
            percentile(&f.latencies, 50.0),
            "ms",
        )
        .target(Bound::value_at_most(10.0))
        .note(format!(
            "{} transitions, each a durable txn from this process on a queue picked at random (then notify_hubs), timed from the commit's return, waited for, then 0-50 ms random pause, while {WRITERS} writers each record on a queue of their own every {} ms ({} recordings); hook start = `date +%s%N` in the hook{lost}{}",
            f.latencies.len(),
            WRITER_PACE.as_millis(),
            f.writer_commits,
            early_note(&f.latencies)
        )),
        Row::new("Q1e", "fleet: commit -> hook start p99, the same", percentile(&f.latencies, 99.0), "ms")
            .target(Bound::value_at_most(50.0)),
    ];
    if let Some((alone, beside)) = f.p6c {
        rows.push(
            Row::new(
                "Q2a",
                format!(
                    "fleet: 8 writers on one queue while {} single-queue hubs listen (P6c)",
                    f.idle_hubs
                ),
                beside,
                "ms",
            )
            .throughput_vs("the same writers alone", alone)
            .target(Bound::ratio_at_least(0.8))
            .note(format!(
                "P6c's measurement: {:.0} transitions/s against {:.0} alone",
                1000.0 / beside,
                1000.0 / alone
            )),
        );
    }
    rows.push(
        Row::new(
            "Q2b",
            format!("fleet: server CPU per commit beside one hub of {} queues' listeners", f.listeners),
            f.beside_us,
            "us",
        )
        .vs("the same, one queue on the server", f.alone_us)
        .target(Bound::ratio_at_most(1.2))
        .note(format!(
            "P6's {CONNECTIONS} writers on one queue (one shared Notifier), every server process's CPU time from /proc over a round of {} commits, per commit; medians of {} rounds beside the hub (its queues of the same database, their watchers listening, no hooks), against {} rounds before it started and after it stopped",
            f.round_commits,
            f.rounds,
            2 * f.rounds
        )),
    );
    rows
}
