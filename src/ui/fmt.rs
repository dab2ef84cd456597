//! How pages write values: times, ages, durations, hook names, query strings.

use crate::queue::model::HistoryRow;
use crate::queue::times;

/// A unix-ms time as RFC 3339 (UTC, seconds).
pub fn time(ms: &i64) -> String {
    times::rfc3339(*ms)
}

/// How long before `now_ms` a unix-ms time was, shortly: `42s`, `5m`, `3h`, `2d`.
pub fn age(ms: &i64, now_ms: &i64) -> String {
    times::age(*ms, *now_ms)
}

/// A duration in ms, shortly: `850 ms`, `12.3 s`, `4m 05s`.
pub fn took(ms: &i64) -> String {
    match *ms {
        ..1000 => format!("{ms} ms"),
        1000..60_000 => format!("{:.1} s", *ms as f64 / 1000.0),
        _ => format!("{}m {:02}s", ms / 60_000, (ms % 60_000) / 1000),
    }
}

/// A history row's hook: `after_merge-01`, or the point alone for a row with no command.
pub fn hook(h: &HistoryRow) -> String {
    match h.command_index {
        Some(i) => format!("{}-{i:02}", h.point),
        None => h.point.to_string(),
    }
}

/// How a history row's command ended: `exit 1`, `signal 9`, or `-`.
pub fn status(h: &HistoryRow) -> String {
    match (h.exit_code, h.signal) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(s)) => format!("signal {s}"),
        _ => "-".into(),
    }
}

/// The name of the log file a history row's command appended to, when it names one.
pub fn log_name(h: &HistoryRow) -> Option<String> {
    let path = h.log_path.as_deref()?;
    let name = std::path::Path::new(path).file_name()?.to_str()?;
    Some(name.to_owned())
}

/// A lock line without its `runner lock…: ` lead (the page names the lock): `free`, `held by
/// pid 42 since …`.
pub fn lock_text(line: &str) -> &str {
    line.split_once(": ").map_or(line, |(_, rest)| rest)
}

/// The host that ran a history row's command (a PostgreSQL queue's rows name it).
pub fn host(h: &HistoryRow) -> Option<String> {
    h.host.clone()
}

/// The choices of a filter's `<select>`: each value with whether it is the one chosen.
pub fn choices(all: &[&'static str], chosen: Option<&str>) -> Vec<(&'static str, bool)> {
    all.iter().map(|v| (*v, chosen == Some(*v))).collect()
}

/// Every point's name, for the point filter.
pub fn points() -> Vec<&'static str> {
    crate::queue::phase::Point::ALL
        .iter()
        .map(|p| p.as_str())
        .collect()
}

/// Every outcome a history row can have, for the outcome filter.
pub const OUTCOMES: [&str; 8] = [
    "ok",
    "failed",
    "timed_out",
    "signalled",
    "spawn_failed",
    "empty",
    "abandoned",
    "dropped",
];

/// `s` percent-encoded for a path segment or a query value: everything but ASCII letters,
/// digits and `-._~` escaped.
pub fn enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A query string of the pairs whose value is set: `?task=t1&after=9`, or empty.
pub fn query(pairs: &[(&str, Option<String>)]) -> String {
    let set: Vec<String> = pairs
        .iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={}", enc(v))))
        .collect();
    if set.is_empty() {
        String::new()
    } else {
        format!("?{}", set.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_shortly() {
        assert_eq!(age(&0, &59_999), "59s");
        assert_eq!(age(&0, &7_200_000), "2h");
        assert_eq!(took(&850), "850 ms");
        assert_eq!(took(&12_345), "12.3 s");
        assert_eq!(took(&245_000), "4m 05s");
        assert_eq!(time(&0), "1970-01-01T00:00:00Z");
        assert_eq!(lock_text("runner lock: free"), "free");
        assert_eq!(
            lock_text("runner lock of queue q: held by pid 1 on h since 2026-01-01T00:00:00Z"),
            "held by pid 1 on h since 2026-01-01T00:00:00Z"
        );
    }

    #[test]
    fn queries_escape_their_values() {
        assert_eq!(enc("a b/<é>"), "a%20b%2F%3C%C3%A9%3E");
        assert_eq!(
            query(&[("task", Some("t&1".into())), ("point", None), ("after", Some("9".into()))]),
            "?task=t%261&after=9"
        );
        assert_eq!(query(&[("task", None)]), "");
    }
}
