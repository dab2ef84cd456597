//! `hookq hub --metrics ADDR`: the hub's own Prometheus metrics, fetched over HTTP while it
//! runs points other processes record.

use crate::support::HANG;
use crate::support::queue as common;

use common::{Running, Ws};
use rustix::process::Signal;

/// Starts `hookq hub --metrics 127.0.0.1:0` and reads the URL it prints.
fn start_hub_with_metrics(ws: &Ws) -> (Running, String) {
    let mut hub = ws.spawn_env(
        &["hub", "--metrics", "127.0.0.1:0"],
        &[("HOOKQ_LOG", "info")],
    );
    let mut url = None;
    ws.eventually("the hub to start and say where its metrics are", || {
        assert!(!hub.exited(), "the hub exited: {}", hub.stderr_so_far());
        url = hub
            .stdout_so_far()
            .lines()
            .find_map(|l| l.strip_prefix("hookq hub: serving metrics at "))
            .map(str::to_owned);
        url.is_some() && hub.stderr_so_far().contains("hub draining")
    });
    let url = url.unwrap();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    assert!(!url.starts_with("http://127.0.0.1:0/"), "{url}");
    assert!(url.ends_with("/metrics"), "{url}");
    (hub, url)
}

/// The exposition at `url`, checking its content type.
fn fetch(url: &str) -> String {
    let mut resp = ureq::get(url).call().unwrap();
    let ct = resp
        .headers()
        .get("content-type")
        .unwrap()
        .to_str()
        .unwrap();
    assert!(ct.starts_with("text/plain; version=0.0.4"), "{ct}");
    resp.body_mut().read_to_string().unwrap()
}

/// The value of the one sample `series` (its name and labels as exposed), if it is there.
fn value(text: &str, series: &str) -> Option<f64> {
    let found: Vec<f64> = text
        .lines()
        .filter_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.parse().unwrap())
        .collect();
    assert!(found.len() <= 1, "{series} twice in\n{text}");
    found.first().copied()
}

#[test]
fn hub_counts_the_hooks_it_runs_and_serves_them() {
    let ws = Ws::init();
    ws.write_config(
        r#"after_proposed = ['echo "$ARC_TASK" >> proposed.out']
after_awaiting_human = ['echo "$ARC_TASK" >> awaiting.out', 'exit 3']"#,
    );
    let (hub, url) = start_hub_with_metrics(&ws);

    let idle = fetch(&url);
    assert_eq!(
        value(
            &idle,
            r#"hookq_hub_hooks_total{point="after_proposed",outcome="ok"}"#
        ),
        Some(0.0),
        "{idle}"
    );
    assert_eq!(value(&idle, "hookq_hub_pass_failures_total"), Some(0.0));

    ws.task_add("t1", "p", "todo.proposed").ok();
    ws.task_add("t2", "p", "todo.proposed").ok();
    ws.hookq(&["task", "move", "t1", "review.awaiting_human", "--no-run"])
        .ok();
    ws.eventually("the hub to run the points", || {
        ws.lines("awaiting.out") == ["t1"] && ws.pending().is_empty()
    });
    assert_eq!(ws.lines("proposed.out"), ["t1", "t2"]);

    // Three points cleared: counted once their pass ends.
    let mut text = String::new();
    ws.eventually("the metrics to count the pass that cleared them", || {
        text = fetch(&url);
        value(&text, "hookq_hub_points_cleared_total") == Some(3.0)
    });
    let hooks = |point: &str, outcome: &str| {
        value(
            &text,
            &format!(r#"hookq_hub_hooks_total{{point="{point}",outcome="{outcome}"}}"#),
        )
    };
    assert_eq!(hooks("after_proposed", "ok"), Some(2.0), "{text}");
    assert_eq!(hooks("after_awaiting_human", "ok"), Some(1.0), "{text}");
    assert_eq!(hooks("after_awaiting_human", "failed"), Some(1.0), "{text}");
    assert_eq!(hooks("after_merge", "ok"), Some(0.0), "{text}");
    let count = |point: &str| {
        value(
            &text,
            &format!(r#"hookq_hub_hook_duration_seconds_count{{point="{point}"}}"#),
        )
    };
    assert_eq!(count("after_proposed"), Some(2.0), "{text}");
    assert_eq!(count("after_awaiting_human"), Some(2.0), "{text}");
    assert_eq!(count("after_fail"), Some(0.0), "{text}");
    assert_eq!(
        value(
            &text,
            r#"hookq_hub_hook_duration_seconds_bucket{point="after_proposed",le="+Inf"}"#
        ),
        Some(2.0)
    );
    let passes = value(&text, "hookq_hub_passes_total").unwrap();
    assert!(passes >= 1.0, "{text}");
    assert_eq!(value(&text, "hookq_hub_pass_failures_total"), Some(0.0));
    assert_eq!(value(&text, "hookq_hub_points_parked_total"), Some(0.0));
    // The history agrees.
    let outcomes: Vec<String> = ws
        .history()
        .into_iter()
        .map(|h| h.outcome.to_string())
        .collect();
    assert_eq!(outcomes.iter().filter(|o| *o == "ok").count(), 3);
    assert_eq!(outcomes.iter().filter(|o| *o == "failed").count(), 1);

    // A config that does not parse fails the passes after it, counted as failures.
    ws.write_config_text(b"after_proposed = [");
    ws.eventually("the hub to count a failed pass", || {
        let text = fetch(&url);
        value(&text, "hookq_hub_pass_failures_total").is_some_and(|n| n >= 1.0)
    });

    hub.signal(Signal::TERM);
    let out = hub.wait_within(HANG);
    assert_eq!(out.code(), Some(0), "{}", out.describe());
    // The server went with it.
    assert!(ureq::get(&url).call().is_err());
}

#[test]
fn hub_metrics_on_a_taken_address_end_with_one_error() {
    let ws = Ws::init();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = ws.hookq(&["hub", "--metrics", &addr]).expect_code(1);
    let errors = out.errors();
    assert_eq!(errors.len(), 1, "{}", out.describe());
    assert!(
        errors[0].starts_with(&format!("error: cannot listen on {addr}: ")),
        "{}",
        out.describe()
    );

    let out = ws.hookq(&["hub", "--metrics", "nowhere"]).expect_code(2);
    assert!(out.stderr().contains("--metrics"), "{}", out.describe());
}
