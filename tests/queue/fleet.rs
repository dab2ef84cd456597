//! `hookq hub` over several workspaces at once (`-C` more than once, `--workspaces FILE`): each
//! drains with its own config, the job slots are shared fairly, the listing file is followed
//! as it changes, and a failing workspace does not hold up the others.

use crate::support::HANG;
use crate::support::queue as common;

use std::path::Path;

use common::{Running, Ws};
use rustix::process::Signal;

/// Starts `hookq hub ARGS` from `from` and waits for its readiness line saying `queues`.
fn start_fleet(from: &Ws, args: &[&str], queues: usize) -> Running {
    let mut hub = from.spawn_env(args, &[("HOOKQ_LOG", "info")]);
    wait_ready(from, &mut hub, queues);
    hub
}

/// Waits until the hub says every one of `queues` queues is attached.
fn wait_ready(ws: &Ws, hub: &mut Running, queues: usize) {
    let s = if queues == 1 { "" } else { "s" };
    let line = format!("hookq hub: ready, {queues} queue{s} attached");
    ws.eventually(&format!("the hub to say `{line}`"), || {
        assert!(!hub.exited(), "the hub exited: {}", hub.stderr_so_far());
        hub.stdout_so_far().lines().any(|l| l == line)
    });
}

/// SIGTERM, then the hub must exit 0 without an error line about any workspace.
fn stop_cleanly(hub: Running) -> String {
    hub.signal(Signal::TERM);
    let out = hub.wait_within(HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    assert!(!out.stderr().contains("error:"), "{}", out.describe());
    out.stderr()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn one_hub_drains_many_workspaces_each_by_its_own_config() {
    let wss: Vec<Ws> = (0..3).map(|_| Ws::init()).collect();
    for (i, ws) in wss.iter().enumerate() {
        ws.write_config(&format!(
            r#"after_proposed = ['echo "ws{i} $ARC_TASK" >> proposed.out']"#
        ));
        ws.task_add("before", "p", "todo.proposed").ok();
    }
    let mut args = vec!["hub", "--jobs", "2", "--metrics", "127.0.0.1:0"];
    for ws in &wss {
        args.extend(["-C", path(ws.root())]);
    }
    let hub = start_fleet(&wss[0], &args, 3);
    let url = hub
        .stdout_so_far()
        .lines()
        .find_map(|l| l.strip_prefix("hookq hub: serving metrics at "))
        .map(str::to_owned)
        .unwrap();
    for ws in &wss {
        ws.task_add("after", "p", "todo.proposed").ok();
    }
    for (i, ws) in wss.iter().enumerate() {
        ws.eventually("each workspace's points to run by its own hooks", || {
            ws.lines("proposed.out") == [format!("ws{i} before"), format!("ws{i} after")]
        });
        ws.eventually("the queue to be empty", || ws.pending().is_empty());
    }
    // Each queue's series carry its `queue` label.
    for ws in &wss {
        let series = format!(
            "hookq_hub_hooks_total{{queue=\"{}\",point=\"after_proposed\",outcome=\"ok\"}} 2",
            ws.root().display()
        );
        ws.eventually("the metrics to count each queue's hooks", || {
            let text = ureq::get(&url)
                .call()
                .unwrap()
                .body_mut()
                .read_to_string()
                .unwrap();
            text.lines().any(|l| l == series)
        });
    }
    stop_cleanly(hub);
}

#[test]
fn minus_c_twice_is_for_the_hub_and_the_view_only() {
    let ws = Ws::init();
    let root = path(ws.root());
    let out = ws.hookq(&["-C", root, "-C", root, "run"]).expect_code(2);
    assert!(
        out.stderr()
            .contains("only `hookq hub` and `hookq ui` take several workspaces"),
        "{}",
        out.describe()
    );
}

#[test]
fn a_busy_queue_does_not_starve_the_others() {
    let marks = Ws::new();
    let marks_file = marks.base().join("marks");
    let hook = |name: &str, sleep: &str| {
        format!(
            r#"after_proposed = ['echo "{name} $ARC_TASK start" >> {m}; {sleep}echo "{name} $ARC_TASK end" >> {m}']"#,
            m = path(&marks_file)
        )
    };
    let busy = Ws::init();
    busy.write_config(&hook("busy", "sleep 0.3; "));
    for i in 0..100 {
        busy.task_add(&format!("b{i}"), "p", "todo.proposed").ok();
    }
    let others: Vec<Ws> = (0..9).map(|_| Ws::init()).collect();
    let mut listing = format!("{}\n", path(busy.root()));
    for (i, ws) in others.iter().enumerate() {
        ws.write_config(&hook(&format!("w{i}"), ""));
        ws.task_add("t", "p", "todo.proposed").ok();
        listing.push_str(&format!("{}\n", path(ws.root())));
    }
    let file = marks.base().join("workspaces");
    std::fs::write(&file, listing).unwrap();
    let hub = start_fleet(
        &busy,
        &["hub", "--jobs", "2", "--workspaces", path(&file)],
        10,
    );
    let read = || {
        std::fs::read_to_string(&marks_file)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    marks.eventually("every small queue's point to run", || {
        let lines = read();
        (0..9).all(|i| lines.contains(&format!("w{i} t end")))
    });
    stop_cleanly(hub);

    let lines = read();
    // At most two points at once in the whole process.
    let mut running = 0i32;
    for l in &lines {
        running += if l.ends_with(" start") { 1 } else { -1 };
        assert!(
            running <= 2,
            "more than two points at once:\n{}",
            lines.join("\n")
        );
    }
    // The nine started while the busy queue had run only a few of its points.
    let busy_starts: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with("busy ") && lines[i].ends_with(" start"))
        .collect();
    let last_small = (0..9)
        .map(|i| {
            let start = format!("w{i} t start");
            lines.iter().position(|l| *l == start).unwrap()
        })
        .max()
        .unwrap();
    let busy_before = busy_starts.iter().filter(|&&i| i < last_small).count();
    assert!(
        busy_before <= 8,
        "the busy queue started {busy_before} points before the last small one:\n{}",
        lines.join("\n")
    );
}

#[test]
fn the_listing_file_is_followed_as_it_changes() {
    let a = Ws::init();
    let b = Ws::init();
    a.write_config(
        r#"after_proposed = ['echo "$ARC_TASK started" >> out; n=0; while [ ! -e go ] && [ $n -lt 3000 ]; do sleep 0.05; n=$((n+1)); done; echo "$ARC_TASK done" >> out']"#,
    );
    b.write_config(r#"after_proposed = ['echo "$ARC_TASK" >> out']"#);
    let dir = Ws::new();
    let file = dir.base().join("workspaces");
    // A relative line is taken from the listing's own folder.
    let rel = pathdiff(a.root(), dir.base());
    std::fs::write(&file, format!("# the hub's queues\n{rel}\n")).unwrap();
    let mut hub = start_fleet(&a, &["hub", "--workspaces", path(&file)], 1);

    // A new line attaches its workspace.
    std::fs::write(
        &file,
        format!("# the hub's queues\n{rel}\n\n{}\n", path(b.root())),
    )
    .unwrap();
    wait_ready(&b, &mut hub, 2);
    b.task_add("b1", "p", "todo.proposed").ok();
    b.eventually("b's point to run", || b.lines("out") == ["b1"]);

    // A removed line stops that workspace's hub once its running command finished.
    a.task_add("a1", "p", "todo.proposed").ok();
    a.eventually("a's command to start", || a.lines("out") == ["a1 started"]);
    std::fs::write(&file, format!("{}\n", path(b.root()))).unwrap();
    std::fs::write(a.root().join("go"), "").unwrap();
    a.eventually("a's running command to finish", || {
        a.lines("out") == ["a1 started", "a1 done"]
    });
    a.eventually("a's hub to stop", || {
        hub.stderr_so_far().contains(": detached, its line removed")
    });
    a.eventually("a's finished point to be cleared", || {
        a.pending().is_empty()
    });
    a.task_add("a2", "p", "todo.proposed").ok();
    b.task_add("b2", "p", "todo.proposed").ok();
    b.eventually("b to go on", || b.lines("out") == ["b1", "b2"]);
    assert_eq!(a.pending().len(), 1, "a is no longer drained");
    assert_eq!(a.lines("out"), ["a1 started", "a1 done"]);
    stop_cleanly(hub);
}

/// `to` relative to `from`, a folder above or beside it.
fn pathdiff(to: &Path, from: &Path) -> String {
    let (to, from) = (to.canonicalize().unwrap(), from.canonicalize().unwrap());
    let common = from
        .ancestors()
        .find(|a| to.starts_with(a))
        .unwrap()
        .to_path_buf();
    let ups = from.strip_prefix(&common).unwrap().components().count();
    let mut rel = "../".repeat(ups);
    rel.push_str(path(to.strip_prefix(&common).unwrap()));
    rel
}

#[test]
fn a_failing_workspace_is_reported_and_retried_while_the_others_drain() {
    let good = Ws::init();
    good.write_config(r#"after_proposed = ['echo "$ARC_TASK" >> out']"#);
    let broken = Ws::init();
    broken.write_config_text(b"[hooks\nafter_proposed = 'nope'\n");
    broken.task_add("x1", "p", "todo.proposed").ok();
    // Not a workspace yet: its hub cannot start until `hookq init` makes it one.
    let later = Ws::new();
    let mut hub = good.spawn_env(
        &[
            "hub",
            "-C",
            path(good.root()),
            "-C",
            path(broken.root()),
            "-C",
            path(later.root()),
        ],
        &[("HOOKQ_LOG", "info")],
    );
    let named = |ws: &Ws, says: &str| {
        let prefix = format!("hookq hub: {}: error: ", ws.root().display());
        hub.stderr_so_far()
            .lines()
            .any(|l| l.starts_with(&prefix) && l.contains(says))
    };
    good.eventually(
        "the broken config to be reported on a line naming its workspace",
        || named(&broken, "config.toml"),
    );
    good.eventually(
        "the missing workspace to be reported, to be tried again",
        || named(&later, "trying again in"),
    );
    good.task_add("g1", "p", "todo.proposed").ok();
    good.eventually("the good workspace to drain", || {
        good.lines("out") == ["g1"]
    });
    assert_eq!(broken.pending().len(), 1);

    // Fixed, each is taken up again.
    broken.write_config(r#"after_proposed = ['echo "$ARC_TASK" >> out']"#);
    broken.eventually("the fixed workspace to drain", || {
        broken.lines("out") == ["x1"]
    });
    later.hookq(&["init"]).ok();
    later.write_config(r#"after_proposed = ['echo "$ARC_TASK" >> out']"#);
    later.task_add("l1", "p", "todo.proposed").ok();
    wait_ready(&later, &mut hub, 3);
    later.eventually("the new workspace to drain", || {
        later.lines("out") == ["l1"]
    });

    hub.signal(Signal::TERM);
    let out = hub.wait_within(HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
}
