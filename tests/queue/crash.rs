//! Crash guarantees (recording is transactional, hooks run at least once), tried with SIGKILL
//! at random moments.
//!
//! 1. A writer process records transitions (with a host table written in the same transaction,
//!    as an embedding task runner would) and is killed again and again: every committed phase
//!    change has its point, and no point exists without its committed phase change.
//! 2. `hookq run` passes are killed again and again while they run hooks: in the end every point's
//!    commands completed at least once, in recorded order per task, and only interrupted points
//!    ran more than once.
//!
//! Default sizes keep CI quick; `HOOKQ_STRESS=1` runs at least 200 kills each. `HOOKQ_SEED=N`
//! replays a run. Figures are printed (`--nocapture`) and written to
//! `target/hookq-guarantees/<test>.json`.

use crate::support::queue as common;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{assert_outbox_consistent, figures, stress};
use hookq::queue::record::{self, MoveFacts};
use hookq::queue::store::Store;
use hookq::{Phase, PlanId, TaskId, Workspace};

const CHILD_DB: &str = "HOOKQ_CRASH_CHILD_DB";

/// How long the twenty runner kills of [`killed_runners`] may take in all before the test calls
/// it a hang; [`KILLS_STRESSED`] for the two hundred and twenty of a stress run. Longer than
/// [`crate::support::HANG`], which bounds one thing a test waits for: this is a loop of many
/// `hookq run` processes on a machine shared with other builds. Nothing is asserted about how
/// fast they go.
const KILLS: Duration = Duration::from_secs(240);

/// [`KILLS`] for a stress run (`HOOKQ_STRESS=1`).
const KILLS_STRESSED: Duration = Duration::from_secs(1200);

/// A small xorshift generator: enough randomness for kill moments, replayable by seed.
struct Rng(u64);

impl Rng {
    fn new() -> Self {
        let seed = std::env::var("HOOKQ_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
                    | 1
            });
        println!("seed {seed} (HOOKQ_SEED={seed} replays it)");
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn kill_and_reap(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Re-runs this test binary as a child that executes only `test`, with `env` set.
fn child_of_this_binary(test: &str, env: &[(&str, &Path)]) -> Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    let exact = crate::support::test_path(module_path!(), test);
    cmd.args(["--exact", &exact, "--nocapture", "--test-threads=1"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

const PHASES: &[&str] = &[
    "todo.ready",
    "review.awaiting_human",
    "review.rework_pending",
    "todo.ready",
    "review.rework_pending",
    "running.gate",
    "review.rework_pending",
    "todo.proposed",
    "done.merged",
    "failed.gate_failed",
    "todo.ready",
];

/// The writer the crash test kills. A no-op unless started by `crash_atomicity`.
#[test]
fn writer_child_entry() {
    let Some(db) = std::env::var_os(CHILD_DB) else {
        return;
    };
    let mut store = Store::open(Path::new(&db)).unwrap();
    store
        .conn()
        .execute_batch(
            "CREATE TABLE IF NOT EXISTS host_log (seq INTEGER PRIMARY KEY, task TEXT NOT NULL, phase TEXT NOT NULL, occurrence INTEGER)",
        )
        .unwrap();
    let pid = std::process::id();
    let mut k: u64 = pid.into();
    loop {
        k += 1;
        if k.is_multiple_of(40) {
            // A whole plan created, then cancelled: one transaction each.
            let plan = PlanId::new(format!("bulk{pid}-{k}")).unwrap();
            store
                .write(|tx| {
                    for i in 0..10 {
                        let t = TaskId::new(format!("b{pid}-{k}-{i}")).unwrap();
                        let tr =
                            record::add_task(tx, &t, &plan, &Phase::new("todo.ready").unwrap())?;
                        log(tx, &tr)?;
                    }
                    Ok(())
                })
                .unwrap();
            store
                .write(|tx| {
                    for tr in record::cancel_plan(tx, &plan)? {
                        log(tx, &tr)?;
                    }
                    Ok(())
                })
                .unwrap();
            continue;
        }
        let task = TaskId::new(format!("t{}", k % 7)).unwrap();
        let phase = Phase::new(PHASES[(k / 7) as usize % PHASES.len()]).unwrap();
        store
            .write(|tx| {
                let exists = tx.query_row(
                    "SELECT COUNT(*) FROM tasks WHERE id = ?1",
                    [task.as_str()],
                    |r| r.get::<_, i64>(0),
                )? > 0;
                let tr = if exists {
                    record::move_task(tx, &task, &phase, &MoveFacts::default())?
                } else {
                    record::add_task(tx, &task, &PlanId::new("p").unwrap(), &phase)?
                };
                log(tx, &tr)
            })
            .unwrap();
    }
}

fn log(
    tx: &rusqlite::Transaction<'_>,
    tr: &hookq::Transition,
) -> Result<(), hookq::queue::StoreError> {
    tx.execute(
        "INSERT INTO host_log (task, phase, occurrence) VALUES (?1, ?2, ?3)",
        rusqlite::params![tr.task, tr.to, tr.occurrence.as_ref().map(|o| o.id)],
    )?;
    Ok(())
}

/// Waits until a writer has committed a transition to `db` (a row in its `host_log`).
fn wait_for_a_commit(db: &Path) {
    // Every 5 ms, not the usual 20: the test kills the writer right after its first commit,
    // and a slower look would let it run far past it.
    crate::support::poll(
        "the writer's first commit",
        Duration::from_millis(5),
        || {
            let logged = rusqlite::Connection::open_with_flags(
                db,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )
            .and_then(|c| c.query_row("SELECT COUNT(*) FROM host_log", [], |r| r.get::<_, i64>(0)))
            .unwrap_or(0);
            (logged > 0).then_some(())
        },
        String::new,
    );
}

/// Checks the outbox invariant on the database as the killed writer left it.
fn check_outbox(db: &Path) -> (usize, usize) {
    let store = Store::open(db).unwrap();
    assert_eq!(store.integrity_check().unwrap(), "ok");
    assert_outbox_consistent(&store);
    let c = store.conn();
    let has_log: bool = c
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'host_log')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    if !has_log {
        return (0, 0);
    }
    let pending: HashMap<i64, (String, String, Option<String>)> = c
        .prepare(
            "SELECT h.id, h.task, h.point, s.state FROM pending_hooks h LEFT JOIN pending_hook_states s ON s.hook_id = h.id",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?, r.get(3)?))))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let logged: Vec<(String, String, Option<i64>)> = c
        .prepare("SELECT task, phase, occurrence FROM host_log ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut last_phase: HashMap<&str, &str> = HashMap::new();
    let mut points = 0;
    for (task, phase, occurrence) in &logged {
        let before = last_phase.insert(task, phase);
        let hook = Phase::new(phase).unwrap().point();
        let entered = before != Some(phase.as_str());
        match (hook, entered, occurrence) {
            (Some(point), true, Some(id)) => {
                points += 1;
                let row = pending
                    .get(id)
                    .unwrap_or_else(|| panic!("occurrence {id} of {task} -> {phase} is lost"));
                assert_eq!(
                    row,
                    &(task.clone(), point.as_str().to_owned(), Some(phase.clone()))
                );
            }
            (Some(_), true, None) => panic!("{task} entered {phase} without recording its point"),
            (_, _, Some(id)) => {
                panic!("occurrence {id} recorded for {task} -> {phase}, which fires nothing")
            }
            (_, _, None) => {}
        }
    }
    assert_eq!(
        pending.len(),
        points,
        "a pending row without its committed transition"
    );
    let phases: HashMap<String, String> = c
        .prepare("SELECT id, phase FROM tasks")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(phases.len(), last_phase.len());
    for (task, phase) in &last_phase {
        assert_eq!(
            phases[*task], *phase,
            "task {task}: phase and host write diverged"
        );
    }
    (logged.len(), points)
}

#[test]
fn crash_atomicity() {
    let kills = if stress() { 220 } else { 25 };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join(".radian/arc/arc.db");
    Store::open(&db).unwrap();
    let mut rng = Rng::new();
    let started = Instant::now();
    let mut transitions = 0;
    let mut points = 0;
    for kill in 0..kills {
        let mut child = child_of_this_binary("writer_child_entry", &[(CHILD_DB, &db)]);
        if kill == 0 {
            // A loaded machine may start every writer too slowly to commit before its kill:
            // the first is killed only once it has committed, so there is something to check.
            wait_for_a_commit(&db);
        }
        // A random moment to kill it at: what the test varies, not a wait for anything.
        std::thread::sleep(Duration::from_micros(2_000 + rng.below(120_000)));
        kill_and_reap(&mut child);
        (transitions, points) = check_outbox(&db);
    }
    assert!(transitions > 0, "the writer never committed a transition");
    figures(
        "crash_atomicity",
        serde_json::json!({
            "kills": kills,
            "transitions_committed": transitions,
            "points_recorded": points,
            "points_lost": 0,
            "orphan_points": 0,
            "integrity_check": "ok",
            "seconds": started.elapsed().as_secs_f64(),
        }),
    );
}

fn hookq() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hookq"));
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

fn setup_workspace(
    root: &Path,
    out: &Path,
    tasks: usize,
    per_task: usize,
) -> Vec<(String, String)> {
    let ws = Workspace::at(root);
    std::fs::create_dir_all(ws.state_dir()).unwrap();
    let out = out.display();
    std::fs::write(
        ws.config_path(),
        format!(
            r#"[queue]
max_interrupted_runs = 1000
[hooks]
after_fail = [
  'echo "$ARC_TASK $ARC_STATE 1" >> {out}',
  'sleep 0.01; echo "$ARC_TASK $ARC_STATE 2" >> {out}',
]
"#
        ),
    )
    .unwrap();
    let mut store = Store::open(&ws.db_path()).unwrap();
    let mut recorded = Vec::new();
    store
        .write(|tx| {
            let plan = PlanId::new("p").unwrap();
            for t in 0..tasks {
                let id = TaskId::new(format!("t{t}")).unwrap();
                record::add_task(tx, &id, &plan, &Phase::new("todo.ready").unwrap())?;
            }
            for k in 0..per_task {
                for t in 0..tasks {
                    let id = TaskId::new(format!("t{t}")).unwrap();
                    let state = format!("failed.s{k}");
                    record::move_task(
                        tx,
                        &id,
                        &Phase::new(&state).unwrap(),
                        &MoveFacts::default(),
                    )?;
                    recorded.push((id.to_string(), state));
                }
            }
            Ok(())
        })
        .unwrap();
    recorded
}

#[test]
fn at_least_once_under_killed_runner() {
    killed_runners("at_least_once_under_killed_runner", 1);
}

/// As above with two workers, each keeping a point prepared behind the one it runs and marking
/// it started when it takes it.
#[test]
fn at_least_once_under_killed_parallel_runner() {
    killed_runners("at_least_once_under_killed_parallel_runner", 2);
}

/// `hookq run --jobs <jobs>` passes SIGKILLed at random moments until the queue is drained by a
/// last pass: no point lost, every task's points first completed in recorded order, and a point
/// run more than once only where more than one pass started it.
fn killed_runners(name: &str, jobs: usize) {
    let kills = if stress() { 220 } else { 20 };
    let (tasks, per_task) = if stress() { (10, 100) } else { (5, 20) };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let recorded = setup_workspace(dir.path(), &out, tasks, per_task);
    let mut rng = Rng::new();
    let mut kills_done = 0;
    let (started, bound) = (
        Instant::now(),
        if stress() { KILLS_STRESSED } else { KILLS },
    );
    while kills_done < kills {
        assert!(started.elapsed() < bound, "runner kills took too long");
        let mut child = hookq()
            .arg("-C")
            .arg(dir.path())
            .args(["run", "--jobs", &jobs.to_string()])
            .spawn()
            .unwrap();
        // A random moment to kill it at: what the test varies, not a wait for anything.
        std::thread::sleep(Duration::from_micros(3_000 + rng.below(150_000)));
        if child.try_wait().unwrap().is_some() {
            // The pass finished before the kill: the queue is drained; queue it all again.
            break;
        }
        kill_and_reap(&mut child);
        kills_done += 1;
    }
    // Let orphaned hook commands of killed passes finish, then drain to the end.
    no_process_in(dir.path());
    let status = hookq()
        .arg("-C")
        .arg(dir.path())
        .arg("run")
        .status()
        .unwrap();
    assert!(status.success());
    no_process_in(dir.path());

    let store = Store::open(&dir.path().join(".radian/arc/arc.db")).unwrap();
    assert_eq!(store.integrity_check().unwrap(), "ok");
    assert!(
        store.pending(0, 10, None).unwrap().is_empty(),
        "points left pending"
    );
    assert_outbox_consistent(&store);
    let text = std::fs::read_to_string(&out).unwrap();
    let mut seen: BTreeMap<(String, String, String), usize> = BTreeMap::new();
    let mut first_order: HashMap<String, Vec<String>> = HashMap::new();
    for line in text.lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        assert_eq!(parts.len(), 3, "torn line {line:?}");
        let key = (
            parts[0].to_owned(),
            parts[1].to_owned(),
            parts[2].to_owned(),
        );
        let n = seen.entry(key).or_default();
        *n += 1;
        if *n == 1 && parts[2] == "1" {
            first_order
                .entry(parts[0].to_owned())
                .or_default()
                .push(parts[1].to_owned());
        }
    }
    let mut lost = 0;
    for (task, state) in &recorded {
        for cmd in ["1", "2"] {
            if !seen.contains_key(&(task.clone(), state.clone(), cmd.to_owned())) {
                lost += 1;
            }
        }
    }
    assert_eq!(lost, 0, "commands never completed");
    for t in 0..tasks {
        let task = format!("t{t}");
        let expected: Vec<String> = recorded
            .iter()
            .filter(|(x, _)| *x == task)
            .map(|(_, s)| s.clone())
            .collect();
        assert_eq!(
            first_order[&task], expected,
            "task {task} ran out of recorded order"
        );
    }
    // Duplicates only where a pass was interrupted: the point's history says more than one
    // pass started it.
    let passes: HashMap<(String, String), i64> = store
        .conn()
        .prepare("SELECT task, state, MAX(passes) FROM hook_history GROUP BY occurrence")
        .unwrap()
        .query_map([], |r| Ok(((r.get(0)?, r.get(1)?), r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut duplicates = 0;
    let mut duplicated_points = 0;
    for ((task, state, _), n) in &seen {
        if *n > 1 {
            duplicates += n - 1;
            let p = passes[&(task.clone(), state.clone())];
            assert!(
                p > 1,
                "{task} {state} ran {n} times but only one pass started it"
            );
        }
    }
    for ((task, state), p) in &passes {
        if *p > 1
            && seen
                .get(&(task.clone(), state.clone(), "1".into()))
                .is_some_and(|n| *n > 1)
        {
            duplicated_points += 1;
        }
    }
    figures(
        name,
        serde_json::json!({
            "jobs": jobs,
            "kills": kills_done,
            "points": recorded.len(),
            "commands_per_point": 2,
            "points_lost": 0,
            "duplicate_command_runs": duplicates,
            "points_run_more_than_once": duplicated_points,
            "interrupted_points": passes.values().filter(|p| **p > 1).count(),
        }),
    );
}

/// Waits until no process works in `dir` (a hook command of a killed pass runs in the
/// workspace it was recorded in, and may outlive its runner a moment): then what the commands
/// wrote is all written.
fn no_process_in(dir: &Path) {
    let dir = dir.canonicalize().unwrap();
    crate::support::eventually("the orphaned hook commands to end", || {
        std::fs::read_dir("/proc").unwrap().flatten().all(|e| {
            let is_pid = e
                .file_name()
                .to_str()
                .is_some_and(|n| n.parse::<u32>().is_ok());
            !is_pid || std::fs::read_link(e.path().join("cwd")).ok().as_deref() != Some(&*dir)
        })
    });
}
