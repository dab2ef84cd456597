//! A `config.toml` rewritten in place by a slow writer while passes run: a pass that reads it
//! half-written never clears a point without running it, and a point whose hook truly has no
//! commands is still cleared once the file has stayed as it is.

use crate::support::queue as common;

use std::process::Child;
use std::time::Duration;

use crate::cli_hub::{start_hub_with, stop_cleanly};
use common::{Config, Ws};

/// The config the writer leaves: t1's `after_fail` appends its task to `ran.out`.
fn full_config() -> String {
    Config::hooks(r#"after_fail = ['echo "$ARC_TASK" >> ran.out']"#).text()
}

/// Waits for the writer to finish, which it does 2 s after it started.
fn finished(mut writer: Child) {
    let mut status = None;
    crate::support::eventually("the writer to finish", || {
        status = writer.try_wait().unwrap();
        status.is_some()
    });
    let status = status.unwrap();
    assert!(status.success(), "the writer failed: {status}");
}

/// The outcomes in history, oldest first.
fn outcomes(ws: &Ws) -> Vec<String> {
    let mut rows: Vec<String> = ws
        .history()
        .into_iter()
        .map(|h| h.outcome.to_string())
        .collect();
    rows.reverse();
    rows
}

#[test]
fn a_hub_draining_during_a_slow_rewrite_runs_the_point_once_it_is_written() {
    // The point is recorded while the file holds `[repository]` to `[hooks]` and nothing
    // after: the hub drains at once, holds it, and runs it once the writer wrote the rest.
    let text = full_config();
    let cut = text.find("[hooks]\n").unwrap() + "[hooks]\n".len();
    let ws = Ws::init();
    ws.write_config_text(text.as_bytes());
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    let hub = start_hub_with(&ws, &["hub", "--jobs", "2"]);
    let writer = ws.slow_config_writer(&text, cut);
    ws.hookq(&["task", "move", "t1", "failed.x", "--no-run"])
        .ok();
    finished(writer);
    ws.eventually("the hub to run the point", || {
        ws.pending().is_empty() && !ws.history().is_empty()
    });
    assert_eq!(ws.lines("ran.out"), ["t1"]);
    assert_eq!(outcomes(&ws), ["ok"], "{}", hub.stderr_so_far());
    stop_cleanly(hub);
}

#[test]
fn a_hub_clears_a_point_without_commands_once_the_config_settled() {
    // Written just now, the config gives after_fail no commands: the hub holds the point, and
    // clears it as `empty` once the file has gone unmodified, with nothing else happening.
    let ws = Ws::init();
    ws.write_config("after_merge = ['true']");
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    let hub = start_hub_with(&ws, &["hub"]);
    ws.hookq(&["task", "move", "t1", "failed.x", "--no-run"])
        .ok();
    // A bound of its own, well short of the hub's 60 s rescan, which would clear it without a
    // pass of its own.
    let cleared =
        crate::support::within(Duration::from_secs(40), Duration::from_millis(50), || {
            ws.pending().is_empty().then_some(())
        });
    assert!(
        cleared.is_some(),
        "the hub never cleared the point: {}",
        hub.stderr_so_far()
    );
    assert_eq!(outcomes(&ws), ["empty"]);
    assert!(
        hub.stderr_so_far()
            .contains("1 point(s) left pending until config.toml has gone unmodified"),
        "{}",
        hub.stderr_so_far()
    );
    stop_cleanly(hub);
}
