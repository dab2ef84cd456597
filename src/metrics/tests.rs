//! The rendered text read back line by line: every line a valid exposition line, the names,
//! types, labels and values as the inputs and the catalog say.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::queue::drain::{DrainEvent, PassReport};
use crate::queue::error::Error;
use crate::queue::phase::Point;
use crate::queue::model::{Outcome, Stats};

use super::*;

/// One sample line: its name, labels and value.
#[derive(Debug, Clone, PartialEq)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// What a text exposition says: its samples, and each family's `# TYPE` and `# HELP`.
#[derive(Debug, Default)]
struct Exposition {
    samples: Vec<Sample>,
    types: BTreeMap<String, String>,
    helps: BTreeMap<String, String>,
}

impl Exposition {
    /// The values of `name`'s samples whose labels include `labels`.
    fn values(&self, name: &str, labels: &[(&str, &str)]) -> Vec<f64> {
        self.samples
            .iter()
            .filter(|s| s.name == name)
            .filter(|s| {
                labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|s| s.value)
            .collect()
    }

    /// The one value of `name` with exactly these labels.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let found: Vec<&Sample> = self
            .samples
            .iter()
            .filter(|s| {
                s.name == name
                    && s.labels.len() == labels.len()
                    && labels
                        .iter()
                        .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .collect();
        assert_eq!(found.len(), 1, "{name} {labels:?} in {:#?}", self.samples);
        found[0].value
    }
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn parse_value(s: &str) -> Result<f64, String> {
    match s {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => s.parse().map_err(|e| format!("value {s:?}: {e}")),
    }
}

/// Reads `{k="v",...}` from the start of `s`: the labels and what follows.
fn parse_labels(s: &str) -> Result<(BTreeMap<String, String>, &str), String> {
    let mut labels = BTreeMap::new();
    let mut rest = s.strip_prefix('{').ok_or("no {")?;
    loop {
        if let Some(after) = rest.strip_prefix('}') {
            return Ok((labels, after));
        }
        let eq = rest.find('=').ok_or("label without =")?;
        let key = &rest[..eq];
        if !is_name(key) {
            return Err(format!("label name {key:?}"));
        }
        let mut chars = rest[eq + 1..].strip_prefix('"').ok_or("unquoted")?.chars();
        let mut value = String::new();
        loop {
            match chars.next().ok_or("unterminated label value")? {
                '"' => break,
                '\\' => match chars.next().ok_or("dangling escape")? {
                    '\\' => value.push('\\'),
                    '"' => value.push('"'),
                    'n' => value.push('\n'),
                    c => return Err(format!("escape \\{c}")),
                },
                '\n' => return Err("raw newline in a label value".into()),
                c => value.push(c),
            }
        }
        if labels.insert(key.to_owned(), value).is_some() {
            return Err(format!("label {key} twice"));
        }
        rest = chars.as_str();
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
}

/// Parses a whole exposition, failing on any line that is not a valid one.
fn parse(text: &str) -> Exposition {
    assert!(text.ends_with('\n'), "no final newline: {text:?}");
    let mut out = Exposition::default();
    for line in text.lines() {
        let parsed: Result<(), String> = (|| {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, help) = rest.split_once(' ').ok_or("help without text")?;
                is_name(name).then_some(()).ok_or("help name")?;
                out.helps.insert(name.to_owned(), help.to_owned());
                return Ok(());
            }
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').ok_or("type without kind")?;
                is_name(name).then_some(()).ok_or("type name")?;
                if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind) {
                    return Err(format!("type {kind}"));
                }
                if out.types.insert(name.to_owned(), kind.to_owned()).is_some() {
                    return Err(format!("{name} typed twice"));
                }
                return Ok(());
            }
            let end = line
                .find(['{', ' '])
                .ok_or("sample without value")?;
            let name = &line[..end];
            is_name(name).then_some(()).ok_or("sample name")?;
            let (labels, rest) = if line[end..].starts_with('{') {
                parse_labels(&line[end..])?
            } else {
                (BTreeMap::new(), &line[end..])
            };
            let value = rest.strip_prefix(' ').ok_or("no space before value")?;
            let value = parse_value(value)?;
            out.samples.push(Sample {
                name: name.to_owned(),
                labels,
                value,
            });
            Ok(())
        })();
        if let Err(e) = parsed {
            panic!("invalid exposition line {line:?}: {e}\n{text}");
        }
    }
    out
}

/// The family a sample belongs to: its name, less a histogram's suffix.
fn family(e: &Exposition, sample: &str) -> String {
    for suffix in ["_bucket", "_sum", "_count"] {
        if let Some(base) = sample.strip_suffix(suffix)
            && e.types.get(base).is_some_and(|t| t == "histogram")
        {
            return base.to_owned();
        }
    }
    sample.to_owned()
}

/// Every metric of `catalog` is in `e` with its type, help and labels, and `e` has nothing
/// else.
fn matches_catalog(e: &Exposition, catalog: &[MetricDoc]) {
    for m in catalog {
        assert_eq!(
            e.types.get(m.name).map(String::as_str),
            Some(m.kind.as_str()),
            "{}",
            m.name
        );
        assert_eq!(
            e.helps.get(m.name).map(String::as_str),
            Some(format!("{}.", m.help).as_str()),
            "{}",
            m.name
        );
    }
    for s in &e.samples {
        let fam = family(e, &s.name);
        let doc = catalog
            .iter()
            .find(|m| m.name == fam)
            .unwrap_or_else(|| panic!("{} is not in the catalog", s.name));
        let mut want: Vec<&str> = doc.labels.to_vec();
        if s.name.ends_with("_bucket") && doc.kind == Kind::Histogram {
            want.push("le");
        }
        want.sort_unstable();
        let got: Vec<&str> = s.labels.keys().map(String::as_str).collect();
        assert_eq!(got, want, "{}", s.name);
    }
    assert_eq!(e.types.len(), catalog.len(), "{:?}", e.types.keys());
}

fn stats() -> Stats {
    Stats {
        pending: 7,
        pending_by_point: vec![("after_merge".into(), 4), ("after_fail".into(), 3)],
        interrupted: 2,
        oldest_recorded_ms: Some(1_000_000),
        history_by_outcome: vec![
            ("ok".into(), 40),
            ("failed".into(), 5),
            ("abandoned".into(), 3),
        ],
        tasks: 11,
        paused_since_ms: Some(1_700_000_000_500),
    }
}

#[test]
fn queue_metrics_say_the_snapshot() {
    let stats = stats();
    let text = queue_metrics(&QueueSnapshot {
        stats: &stats,
        lock_held: true,
        now_ms: 1_090_500,
    });
    let e = parse(&text);
    matches_catalog(&e, QUEUE_METRICS);
    assert_eq!(e.value("hookq_pending", &[("point", "after_merge")]), 4.0);
    assert_eq!(e.value("hookq_pending", &[("point", "after_fail")]), 3.0);
    // Every point is there, at 0 when none of it is pending.
    for p in ["after_rework", "after_awaiting_human", "after_proposed"] {
        assert_eq!(e.value("hookq_pending", &[("point", p)]), 0.0, "{p}");
    }
    // In the order config and listings show the points.
    let points: Vec<&str> = e
        .samples
        .iter()
        .filter(|s| s.name == "hookq_pending")
        .map(|s| s.labels["point"].as_str())
        .collect();
    assert_eq!(points, Point::ALL.map(Point::as_str));
    assert_eq!(e.value("hookq_pending_points", &[]), 7.0);
    assert_eq!(e.value("hookq_oldest_pending_age_seconds", &[]), 90.5);
    assert_eq!(e.value("hookq_interrupted", &[]), 2.0);
    assert_eq!(e.value("hookq_parked", &[]), 3.0);
    assert_eq!(e.value("hookq_runner_lock_held", &[]), 1.0);
    assert_eq!(e.value("hookq_paused", &[]), 1.0);
    assert_eq!(
        e.value("hookq_paused_since_timestamp_seconds", &[]),
        1_700_000_000.5
    );
    assert_eq!(e.value("hookq_tasks", &[]), 11.0);
    assert_eq!(e.value("hookq_history", &[("outcome", "ok")]), 40.0);
    assert_eq!(e.value("hookq_history", &[("outcome", "failed")]), 5.0);
    assert_eq!(e.value("hookq_history", &[("outcome", "abandoned")]), 3.0);
    for o in [
        "signalled",
        "timed_out",
        "spawn_failed",
        "empty",
        "dropped",
    ] {
        assert_eq!(e.value("hookq_history", &[("outcome", o)]), 0.0, "{o}");
    }
}

#[test]
fn an_empty_running_queue_with_the_lock_free_is_all_zeros() {
    let stats = Stats {
        pending: 0,
        pending_by_point: vec![],
        interrupted: 0,
        oldest_recorded_ms: None,
        history_by_outcome: vec![],
        tasks: 0,
        paused_since_ms: None,
    };
    let text = queue_metrics(&QueueSnapshot {
        stats: &stats,
        lock_held: false,
        now_ms: 5_000,
    });
    let e = parse(&text);
    matches_catalog(&e, QUEUE_METRICS);
    assert!(!e.samples.is_empty());
    assert!(e.samples.iter().all(|s| s.value == 0.0), "{text}");
}

#[test]
fn a_clock_behind_the_oldest_point_gives_age_zero_not_negative() {
    let stats = stats();
    let text = queue_metrics(&QueueSnapshot {
        stats: &stats,
        lock_held: false,
        now_ms: 500,
    });
    let e = parse(&text);
    assert_eq!(e.value("hookq_oldest_pending_age_seconds", &[]), 0.0);
    assert_eq!(e.value("hookq_runner_lock_held", &[]), 0.0);
}

#[test]
fn hostile_stored_names_are_escaped_and_read_back_as_they_are() {
    // Only SQL written by hand stores such names; they must not break the exposition.
    let hostile = "x\"} 1\nhookq_paused 0 \\ <script>";
    let mut stats = stats();
    stats.pending_by_point.push((hostile.into(), 9));
    stats.history_by_outcome.push((hostile.into(), 6));
    let text = queue_metrics(&QueueSnapshot {
        stats: &stats,
        lock_held: false,
        now_ms: 0,
    });
    let e = parse(&text);
    assert_eq!(e.value("hookq_pending", &[("point", hostile)]), 9.0);
    assert_eq!(e.value("hookq_history", &[("outcome", hostile)]), 6.0);
    // After the known ones.
    let last = e.samples.iter().rfind(|s| s.name == "hookq_pending").unwrap();
    assert_eq!(last.labels["point"], hostile);
    assert_eq!(e.values("hookq_paused", &[]), [1.0]);
}

#[test]
fn hub_metrics_count_hooks_passes_takeovers_and_reconnects() {
    let m = HubMetrics::new();
    let fresh = parse(&m.render());
    matches_catalog(&fresh, HUB_METRICS);
    assert!(fresh.samples.iter().all(|s| s.value == 0.0));
    for p in Point::ALL {
        assert_eq!(
            fresh.value(
                "hookq_hub_hook_duration_seconds_count",
                &[("point", p.as_str())]
            ),
            0.0
        );
    }

    m.hook_ran(Point::AfterMerge, Outcome::Ok, Duration::from_millis(20));
    m.hook_ran(Point::AfterMerge, Outcome::Ok, Duration::from_millis(700));
    m.hook_ran(Point::AfterMerge, Outcome::Failed, Duration::from_secs(2));
    m.hook_ran(Point::AfterFail, Outcome::TimedOut, Duration::from_secs(7200));
    m.pass_ended(Some(&PassReport {
        cleared: 3,
        parked: 1,
        ..PassReport::default()
    }));
    m.pass_ended(Some(&PassReport {
        cleared: 2,
        ..PassReport::default()
    }));
    m.pass_ended(None);
    m.took_over(false);
    m.took_over(true);
    m.took_over(true);
    m.reconnected();

    let text = m.render();
    // The same text at every scrape while nothing changes, in a fixed order.
    assert_eq!(m.render(), text);
    let e = parse(&text);
    matches_catalog(&e, HUB_METRICS);
    let first: Vec<(&str, &str)> = e
        .samples
        .iter()
        .filter(|s| s.name == "hookq_hub_hooks_total")
        .take(2)
        .map(|s| (s.labels["point"].as_str(), s.labels["outcome"].as_str()))
        .collect();
    assert_eq!(first, [("after_merge", "ok"), ("after_merge", "failed")]);
    let hooks = |p: &str, o: &str| e.value("hookq_hub_hooks_total", &[("point", p), ("outcome", o)]);
    assert_eq!(hooks("after_merge", "ok"), 2.0);
    assert_eq!(hooks("after_merge", "failed"), 1.0);
    assert_eq!(hooks("after_fail", "timed_out"), 1.0);
    // Every point with every outcome a command can have is there from the start.
    assert_eq!(e.values("hookq_hub_hooks_total", &[]).len(), 25);
    assert_eq!(e.values("hookq_hub_hooks_total", &[]).iter().sum::<f64>(), 4.0);

    let merge = [("point", "after_merge")];
    assert_eq!(e.value("hookq_hub_hook_duration_seconds_count", &merge), 3.0);
    assert!((e.value("hookq_hub_hook_duration_seconds_sum", &merge) - 2.72).abs() < 1e-9);
    let bucket = |point: &str, le: &str| {
        e.value(
            "hookq_hub_hook_duration_seconds_bucket",
            &[("point", point), ("le", le)],
        )
    };
    assert_eq!(bucket("after_merge", "0.01"), 0.0);
    assert_eq!(bucket("after_merge", "0.025"), 1.0);
    assert_eq!(bucket("after_merge", "1"), 2.0);
    assert_eq!(bucket("after_merge", "2.5"), 3.0);
    assert_eq!(bucket("after_merge", "+Inf"), 3.0);
    // Longer than the last bucket: counted in +Inf only.
    assert_eq!(bucket("after_fail", "3600"), 0.0);
    assert_eq!(bucket("after_fail", "+Inf"), 1.0);
    // Buckets are cumulative.
    for p in Point::ALL {
        let counts = e.values(
            "hookq_hub_hook_duration_seconds_bucket",
            &[("point", p.as_str())],
        );
        assert_eq!(counts.len(), DURATION_BUCKETS.len() + 1);
        assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{p:?}: {counts:?}");
    }

    assert_eq!(e.value("hookq_hub_passes_total", &[]), 3.0);
    assert_eq!(e.value("hookq_hub_pass_failures_total", &[]), 1.0);
    assert_eq!(e.value("hookq_hub_points_cleared_total", &[]), 5.0);
    assert_eq!(e.value("hookq_hub_points_parked_total", &[]), 1.0);
    assert_eq!(
        e.value("hookq_hub_lock_takeovers_total", &[("how", "released")]),
        1.0
    );
    assert_eq!(
        e.value("hookq_hub_lock_takeovers_total", &[("how", "lease_expired")]),
        2.0
    );
    assert_eq!(e.value("hookq_hub_reconnects_total", &[]), 1.0);
}

#[test]
fn drain_events_are_counted_as_the_drain_reports_them() {
    let m = HubMetrics::new();
    m.drain_event(DrainEvent::Command {
        point: Point::AfterProposed,
        outcome: Outcome::Signalled,
        duration: Duration::from_millis(3),
    });
    let report = PassReport {
        cleared: 1,
        ..PassReport::default()
    };
    m.drain_event(DrainEvent::Pass(Ok(&report)));
    let failure = Error::Stopped {
        path: "runner.lock".into(),
    };
    m.drain_event(DrainEvent::Pass(Err(&failure)));
    let e = parse(&m.render());
    assert_eq!(
        e.value(
            "hookq_hub_hooks_total",
            &[("point", "after_proposed"), ("outcome", "signalled")]
        ),
        1.0
    );
    assert_eq!(
        e.value(
            "hookq_hub_hook_duration_seconds_bucket",
            &[("point", "after_proposed"), ("le", "0.005")]
        ),
        1.0
    );
    assert_eq!(e.value("hookq_hub_passes_total", &[]), 2.0);
    assert_eq!(e.value("hookq_hub_pass_failures_total", &[]), 1.0);
    assert_eq!(e.value("hookq_hub_points_cleared_total", &[]), 1.0);
}

#[test]
fn served_metrics_answer_on_loopback_and_stop_when_dropped() {
    let m = std::sync::Arc::new(HubMetrics::new());
    let server = {
        let m = std::sync::Arc::clone(&m);
        serve("127.0.0.1:0".parse().unwrap(), move || m.render()).unwrap()
    };
    let addr = server.local_addr();
    assert_ne!(addr.port(), 0);
    m.reconnected();
    let mut resp = ureq::get(&format!("http://{addr}/metrics")).call().unwrap();
    assert_eq!(
        resp.headers().get("content-type").unwrap().to_str().unwrap(),
        CONTENT_TYPE
    );
    let e = parse(&resp.body_mut().read_to_string().unwrap());
    assert_eq!(e.value("hookq_hub_reconnects_total", &[]), 1.0);

    let other = ureq::get(&format!("http://{addr}/other")).call();
    assert!(
        matches!(other, Err(ureq::Error::StatusCode(404))),
        "{other:?}"
    );

    // Taken: a second server on it is refused, with the address in the error.
    let taken = serve(addr, String::new).unwrap_err();
    assert!(matches!(taken, ServeError::Bind { addr: a, .. } if a == addr));
    assert!(
        taken
            .to_string()
            .starts_with(&format!("cannot listen on {addr}: ")),
        "{taken}"
    );

    drop(server);
    assert!(std::net::TcpStream::connect(addr).is_err());
}


#[test]
fn a_queue_read_now_gives_its_pending_points_and_its_lock() {
    use crate::queue::handle::Queue;
    use crate::queue::ids::{PlanId, TaskId};
    use crate::queue::lock::{RunnerLock, Wait};
    use crate::queue::phase::Phase;
    use crate::queue::record::{self, MoveFacts};
    use crate::queue::store::Store;
    use crate::queue::workspace::Workspace;

    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::at(dir.path());
    let mut store = Store::open(&ws.db_path()).unwrap();
    store
        .write(|tx| {
            for t in ["a", "b"] {
                let t = TaskId::new(t).unwrap();
                let ready = Phase::new("todo.ready").unwrap();
                record::add_task(tx, &t, &PlanId::new("p").unwrap(), &ready)?;
                let failed = Phase::new("failed.x").unwrap();
                record::move_task(tx, &t, &failed, &MoveFacts::default())?;
            }
            Ok(())
        })
        .unwrap();
    let mut queue = Queue::sqlite(&ws, store);

    let e = parse(&read_queue_metrics(&mut queue).unwrap());
    matches_catalog(&e, QUEUE_METRICS);
    assert_eq!(e.value("hookq_pending", &[("point", "after_fail")]), 2.0);
    assert_eq!(e.value("hookq_pending_points", &[]), 2.0);
    assert_eq!(e.value("hookq_tasks", &[]), 2.0);
    assert_eq!(e.value("hookq_runner_lock_held", &[]), 0.0);
    assert_eq!(e.value("hookq_paused", &[]), 0.0);
    assert!(e.value("hookq_oldest_pending_age_seconds", &[]) >= 0.0);

    let lock = RunnerLock::acquire(&ws.lock_path(), Wait::No, &|| true)
        .unwrap()
        .expect("free");
    queue.pause().unwrap();
    let e = parse(&read_queue_metrics(&mut queue).unwrap());
    assert_eq!(e.value("hookq_runner_lock_held", &[]), 1.0);
    assert_eq!(e.value("hookq_paused", &[]), 1.0);
    assert!(e.value("hookq_paused_since_timestamp_seconds", &[]) > 1.7e9);
    drop(lock);
}

#[test]
fn a_hub_of_many_queues_labels_each_series_by_queue() {
    let m = HubMetrics::for_queues();
    let fresh = parse(&m.render());
    assert!(fresh.samples.is_empty(), "no queue, no series");
    m.queue("/srv/a")
        .hook_ran(Point::AfterMerge, Outcome::Ok, Duration::from_millis(20));
    m.queue("/srv/b").pass_ended(None);
    m.queue("/srv/b").took_over(true);
    let e = parse(&m.render());
    assert!(
        e.samples.iter().all(|s| s.labels.contains_key("queue")),
        "{:#?}",
        e.samples
    );
    let hooks = |q: &str| {
        e.value(
            "hookq_hub_hooks_total",
            &[("queue", q), ("point", "after_merge"), ("outcome", "ok")],
        )
    };
    assert_eq!((hooks("/srv/a"), hooks("/srv/b")), (1.0, 0.0));
    let failures = |q: &str| e.value("hookq_hub_pass_failures_total", &[("queue", q)]);
    assert_eq!((failures("/srv/a"), failures("/srv/b")), (0.0, 1.0));
    assert_eq!(
        e.value(
            "hookq_hub_lock_takeovers_total",
            &[("queue", "/srv/b"), ("how", "lease_expired")]
        ),
        1.0
    );
    // Queue by queue, in the order they were first named.
    let first = e
        .samples
        .iter()
        .position(|s| s.labels["queue"] == "/srv/b")
        .unwrap();
    assert!(
        e.samples[..first]
            .iter()
            .filter(|s| s.name == "hookq_hub_hooks_total")
            .all(|s| s.labels["queue"] == "/srv/a")
    );
}

#[test]
fn many_queues_label_each_series_by_queue() {
    let a = stats();
    let b = Stats {
        pending: 0,
        pending_by_point: vec![],
        interrupted: 0,
        oldest_recorded_ms: None,
        history_by_outcome: vec![],
        tasks: 0,
        paused_since_ms: None,
    };
    let snapshot = |stats| QueueSnapshot {
        stats,
        lock_held: false,
        now_ms: 2_000_000,
    };
    let text = queues_metrics(&[("/srv/a", snapshot(&a)), ("/srv/b", snapshot(&b))]);
    let e = parse(&text);
    assert!(
        e.samples.iter().all(|s| s.labels.contains_key("queue")),
        "{text}"
    );
    let pending = |q: &str| e.value("hookq_pending_points", &[("queue", q)]);
    assert_eq!((pending("/srv/a"), pending("/srv/b")), (7.0, 0.0));
    assert_eq!(
        e.value(
            "hookq_pending",
            &[("queue", "/srv/a"), ("point", "after_merge")]
        ),
        4.0
    );
    assert_eq!(
        e.value("hookq_oldest_pending_age_seconds", &[("queue", "/srv/a")]),
        1000.0
    );
    // One queue's text, its series labelled: the same metrics, the same order.
    let one = queues_metrics(&[("/srv/a", snapshot(&a))]);
    let unlabelled = one.replace("{queue=\"/srv/a\"}", "").replace("queue=\"/srv/a\",", "");
    assert_eq!(unlabelled, queue_metrics(&snapshot(&a)));
}
