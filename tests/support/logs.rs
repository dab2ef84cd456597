//! Hook logs that do not fill the disk, as the binary keeps them on either backend: pruned with
//! a task's last history rows, trimmed to whole newest runs past `queue.max_log_file_bytes`,
//! never cut while a hook writes. The `queue` binary runs these on SQLite, the `postgres`
//! binary on a queue there.

use std::path::PathBuf;

use crate::support::queue::{Ws, log_runs};

/// The `[hooks]` body the scenarios expect.
pub const HOOKS: &str = r#"after_fail = ['echo "fail $ARC_TASK $ARC_STATE"']
after_rework = ['echo "rework $ARC_TASK"']
"#;

/// The `[queue]` lines the scenarios expect: a day of history, logs kept to 1 KiB a file.
pub const QUEUE: &str = "keep_history_days = 1\nmax_log_file_bytes = 1024\n";

const DAY_MS: i64 = 86_400_000;

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// `runs/` of the workspace.
fn runs(ws: &Ws) -> PathBuf {
    ws.state_dir().join("runs")
}

/// The names of the files in `task`'s log folder, sorted; none when it is gone.
pub fn log_names(ws: &Ws, task: &str) -> Vec<String> {
    let dir = runs(ws).join(task).join("hooks");
    let mut names: Vec<String> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => panic!("{}: {e}", dir.display()),
    };
    names.sort();
    names
}

/// The tasks of the queue's history rows, as `queue history --json` lists them, sorted.
fn history_tasks(ws: &Ws) -> Vec<String> {
    let out = ws.hookq(&["queue", "history", "--json", "--limit", "1000"]);
    let rows: serde_json::Value = serde_json::from_str(&out.ok().stdout()).unwrap();
    let mut tasks: Vec<String> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["task"].as_str().unwrap().to_owned())
        .collect();
    tasks.sort();
    tasks.dedup();
    tasks
}

/// With `keep_history_days = 1` and rows aged by hand (`age(task, point, finished_ms)` sets the
/// finish time of that task's rows of that point), a pass removes exactly the logs of the tasks
/// left with no history row and no pending point, with their empty folders, and nothing else
/// under `runs/`; `queue log` says `pruned` for a log a row names that is gone; a task recorded
/// again starts new logs.
pub fn pruned_tasks_lose_their_logs(ws: &Ws, age: &dyn Fn(&str, &str, i64)) {
    ws.settle_config();
    for t in ["t1", "t2", "t3", "t4", "t5"] {
        ws.task_add(t, "p", "failed.x").ok();
    }
    ws.hookq(&["task", "move", "t3", "review.rework_pending", "--no-run"])
        .ok();
    ws.hookq(&["run"]).ok();
    for t in ["t1", "t2", "t4", "t5"] {
        assert_eq!(log_names(ws, t), ["after_fail-01.log"], "{t}");
    }
    assert_eq!(
        log_names(ws, "t3"),
        ["after_fail-01.log", "after_rework-01.log"]
    );
    // Files that are not hookq's logs, under `runs/` and in a task's log folder.
    let runs = runs(ws);
    std::fs::write(runs.join("notes.txt"), "mine").unwrap();
    std::fs::write(runs.join("t5/hooks/mine.txt"), "mine").unwrap();

    let old = now_ms() - 2 * DAY_MS;
    for t in ["t1", "t2", "t3", "t5"] {
        age(t, "after_fail", old);
    }
    // t2 has a point pending; t3 keeps its after_rework row; t4's row is recent.
    ws.hookq(&["task", "move", "t2", "review.rework_pending", "--no-run"])
        .ok();
    ws.hookq(&["queue", "pause"]).ok();
    let out = ws.hookq(&["run"]).expect_code(0);
    assert!(out.warnings().is_empty(), "{}", out.describe());

    assert!(!runs.join("t1").exists(), "t1's logs and folders went");
    assert_eq!(log_names(ws, "t2"), ["after_fail-01.log"], "pending: kept");
    assert_eq!(
        log_names(ws, "t3"),
        ["after_fail-01.log", "after_rework-01.log"],
        "a row left names them"
    );
    assert_eq!(log_names(ws, "t4"), ["after_fail-01.log"]);
    assert_eq!(log_names(ws, "t5"), ["mine.txt"], "only hookq's logs went");
    assert!(runs.join("notes.txt").is_file());
    assert_eq!(history_tasks(ws), ["t3", "t4"]);

    // A log a history row names that is gone reads as pruned, not as an error.
    std::fs::remove_file(runs.join("t4/hooks/after_fail-01.log")).unwrap();
    let out = ws.hookq(&["queue", "log", "t4"]).ok();
    assert!(
        out.stdout().contains("==> after_fail-01.log <==\npruned"),
        "{}",
        out.describe()
    );
    let out = ws.hookq(&["queue", "log", "t3", "--tail", "2"]).ok();
    assert!(out.stdout().contains("rework t3"), "{}", out.describe());

    // A task whose logs went, recorded again: its new run logs anew.
    ws.hookq(&["queue", "resume"]).ok();
    ws.hookq(&["task", "move", "t1", "review.rework_pending"])
        .ok();
    assert_eq!(log_names(ws, "t1"), ["after_rework-01.log"]);
    let log = std::fs::read_to_string(runs.join("t1/hooks/after_rework-01.log")).unwrap();
    assert!(log.contains("\nrework t1\n"), "{log}");
}

/// The log file of `task`'s first `after_fail` command.
fn fail_log(ws: &Ws, task: &str) -> PathBuf {
    runs(ws).join(task).join("hooks/after_fail-01.log")
}

/// The occurrence a run's header names.
fn occurrence(header: &str) -> i64 {
    let rest = header.split(" occurrence ").nth(1).unwrap();
    rest.split(' ').next().unwrap().parse().unwrap()
}

/// With `max_log_file_bytes = 1024`, a file that runs pass keeps whole runs, the newest, and
/// stays within the cap plus the run written last.
pub fn a_file_past_its_cap_keeps_whole_newest_runs(ws: &Ws) {
    let mut occurrences = Vec::new();
    for i in 0..=12 {
        let out = if i == 0 {
            ws.task_add("t9", "p", "failed.s0").ok()
        } else {
            ws.hookq(&["task", "move", "t9", &format!("failed.s{i}")])
                .ok()
        };
        let id = out
            .stdout()
            .split("(occurrence ")
            .nth(1)
            .and_then(|r| r.split(')').next())
            .unwrap()
            .parse::<i64>()
            .unwrap();
        occurrences.push(id);
        if i == 0 {
            continue;
        }
        let bytes = std::fs::read(fail_log(ws, "t9")).unwrap();
        let kept = log_runs(&bytes);
        assert!(!kept.is_empty());
        for run in &kept {
            assert!(run.footer.is_some(), "every run kept is whole: {run:?}");
            assert!(String::from_utf8_lossy(&run.body).starts_with("fail t9 failed.s"));
        }
        let ids: Vec<i64> = kept.iter().map(|r| occurrence(&r.header)).collect();
        assert_eq!(
            ids,
            occurrences[occurrences.len() - ids.len()..],
            "the newest runs, in order"
        );
        assert!(
            bytes.len() <= 1024 + 400,
            "within the cap and one run: {} bytes",
            bytes.len()
        );
    }
    let kept = log_runs(&std::fs::read(fail_log(ws, "t9")).unwrap());
    assert!(kept.len() < 13, "the oldest runs went");
    assert!(!fail_log(ws, "t9").with_extension("log.trim").exists());
}

/// A hook writing more than the cap while it runs keeps every byte it wrote: the file is
/// trimmed only before the next run appends (even when that run's log is opened while this one
/// runs), and `queue log` reads it meanwhile.
pub fn a_running_hooks_log_is_never_cut(ws: &Ws, write_hooks: &dyn Fn(&str)) {
    let hooks = r#"after_fail = ['if [ "$ARC_STATE" = failed.a ]; then head -c 3000 /dev/zero | tr "\000" x; echo; touch running; i=0; while [ ! -e release ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; fi; echo "end $ARC_STATE"']"#;
    write_hooks(hooks);
    ws.task_add("t8", "p", "failed.a").ok();
    ws.hookq(&["task", "move", "t8", "failed.b", "--no-run"])
        .ok();
    let runner = ws.spawn(&["run"]);
    // The hook's file says it wrote past the cap; its log holds the bytes once hookq has
    // copied them from the hook's pipe, which may be a moment later.
    ws.eventually("the hook to write past the cap", || {
        ws.root().join("running").exists()
    });
    let xs = "x".repeat(3000);
    ws.eventually("the log to hold what the hook wrote", || {
        std::fs::read(fail_log(ws, "t8"))
            .is_ok_and(|b| String::from_utf8_lossy(&b).contains(&format!("{xs}\n")))
    });
    let bytes = std::fs::read(fail_log(ws, "t8")).unwrap();
    assert!(bytes.len() > 3000, "past the cap");
    let text = String::from_utf8_lossy(&bytes);
    assert!(
        text.starts_with("--- hookq ") && text.contains(&xs),
        "{text}"
    );
    let out = ws.hookq(&["queue", "log", "t8"]).ok();
    assert!(out.stdout().contains(&xs), "{}", out.describe());
    std::fs::write(ws.root().join("release"), "").unwrap();
    let out = runner.wait_within(super::HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    // The next run, of the point behind it, found the file past its cap: the run before it,
    // bigger than the cap alone, went whole, after it had ended.
    let kept = log_runs(&std::fs::read(fail_log(ws, "t8")).unwrap());
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(kept[0].header.contains("ARC_STATE=failed.b"));
    assert_eq!(String::from_utf8_lossy(&kept[0].body), "end failed.b\n");
}
