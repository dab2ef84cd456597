//! Times as people read them in hookq's listings and pages: a unix-ms time as RFC 3339 to the
//! second, and how long ago one was, shortly.

/// A unix-ms time as RFC 3339 (UTC, seconds): `2026-12-03T17:18:34Z`; the number itself for a
/// time chrono cannot hold.
pub fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_else(|| ms.to_string())
}

/// How long before `now_ms` a unix-ms time was, shortly: `42s`, `5m`, `3h`, `2d` (`0s` for a
/// time to come).
pub fn age(ms: i64, now_ms: i64) -> String {
    let s = (now_ms - ms).max(0) / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86_400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_and_times() {
        assert_eq!(age(0, 59_999), "59s");
        assert_eq!(age(0, 60_000), "1m");
        assert_eq!(age(0, 7_200_000), "2h");
        assert_eq!(age(0, 3 * 86_400_000), "3d");
        assert_eq!(age(10, 0), "0s");
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(i64::MAX), i64::MAX.to_string());
    }
}
