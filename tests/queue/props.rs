//! Property tests for everything parsed at the edge: ids, phases and `config.toml`.
//!
//! `cargo fuzz` needs a nightly toolchain, which these machines cannot fetch; proptest runs on
//! stable, inside `cargo test`. Cases default to 256 per property (`PROPTEST_CASES` raises it);
//! failures found are kept in `proptest-regressions/` and replayed first on every run.

use std::path::Path;

use hookq::queue::config::{Config, ConfigError};
use hookq::{Phase, PlanId, Point, TaskId};
use proptest::prelude::*;

/// The id rule (`[A-Za-z0-9][A-Za-z0-9._-]{0,127}`, never `.` or `..`), written independently
/// of the crate's parser.
fn id_ok(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && s != "."
        && s != ".."
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || b"._-".contains(c))
}

/// The phase rule (`<state>.<phase>`, each part `[a-z][a-z0-9_]*` of at most 64 characters),
/// written independently.
fn phase_ok(s: &str) -> bool {
    let part = |p: &str| {
        let b = p.as_bytes();
        !b.is_empty()
            && b.len() <= 64
            && b[0].is_ascii_lowercase()
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_')
    };
    match s.split_once('.') {
        Some((a, b)) => part(a) && part(b),
        None => false,
    }
}

/// Strings near the edges of the rules: the allowed alphabet plus the characters that attack
/// paths, shells and terminals, and Unicode lookalikes.
fn edgy() -> impl Strategy<Value = String> {
    let chars = prop_oneof![
        8 => prop::char::ranges(vec!['a'..='z', 'A'..='Z', '0'..='9'].into()),
        2 => prop::sample::select(vec!['.', '_', '-', '/', '\\', '\0', '\n', '\r', ' ', '$', '\'', '"', '`', ';', '*']),
        1 => prop::sample::select(vec!['а', 'е', 'ｔ', 'ı', '\u{200b}', '\u{feff}', 'é', '🙂']),
    ];
    prop::collection::vec(chars, 0..140).prop_map(|v| v.into_iter().collect())
}

proptest! {
    #[test]
    fn task_and_plan_ids_follow_the_rule(s in edgy()) {
        let expected = id_ok(&s);
        prop_assert_eq!(TaskId::new(s.clone()).is_ok(), expected);
        prop_assert_eq!(PlanId::new(s.clone()).is_ok(), expected);
        if let Err(e) = TaskId::new(s.clone()) {
            let msg = e.to_string();
            prop_assert!(!msg.contains('\n') && !msg.contains('\0'), "unsafe message {:?}", msg);
            prop_assert!(msg.len() < 300);
        }
    }

    #[test]
    fn any_string_is_an_id_or_an_error(s in ".{0,300}") {
        prop_assert_eq!(TaskId::new(s.clone()).is_ok(), id_ok(&s));
    }

    #[test]
    fn phases_follow_the_rule(s in "[a-z_0-9.A-Z\\-]{0,20}|[a-z]{1,8}\\.[a-z0-9_]{1,8}") {
        let parsed = Phase::new(&s);
        prop_assert_eq!(parsed.is_ok(), phase_ok(&s), "{:?}", s);
        if let Ok(p) = parsed {
            prop_assert_eq!(format!("{}.{}", p.state(), p.phase()), s.clone());
            let expected = match (p.state(), p.phase()) {
                ("done", "merged") => Some(Point::AfterMerge),
                ("failed", _) => Some(Point::AfterFail),
                ("review", "rework_pending") => Some(Point::AfterRework),
                ("review", "awaiting_human") => Some(Point::AfterAwaitingHuman),
                ("todo", "proposed") => Some(Point::AfterProposed),
                _ => None,
            };
            prop_assert_eq!(p.point(), expected);
        }
    }

    #[test]
    fn config_bytes_never_panic_and_errors_are_one_located_line(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        check_config(&bytes)?;
    }

    #[test]
    fn config_text_never_panics(text in "(\\[(hooks|gate|queue|repository)\\]\n|[a-z_]{1,22} = (\\[|'x'|\"y\"|-?[0-9]{1,25}|[0-9]\\.5|true|\\{\\}|\\[\\[)\n|\\]\n|[\\x00-\\x7f]{0,10})*") {
        check_config(text.as_bytes())?;
    }

    #[test]
    fn timeouts_are_whole_seconds_in_range(n in any::<i64>(), frac in prop::bool::ANY) {
        let text = if frac { format!("[gate]\ncommand_timeout_secs = {n}.5\n") } else { format!("[gate]\ncommand_timeout_secs = {n}\n") };
        let parsed = Config::parse(Path::new("c.toml"), text.as_bytes());
        let valid = !frac && (1..=7 * 24 * 3600).contains(&n);
        prop_assert_eq!(parsed.is_ok(), valid, "{}", text);
        match parsed {
            Ok(c) => prop_assert_eq!(c.gate.command_timeout.as_secs() as i64, n),
            Err(e) => prop_assert!(e.to_string().starts_with("c.toml:2: gate.command_timeout_secs: "), "{}", e),
        }
    }

    #[test]
    fn hook_lines_round_trip(lines in prop::collection::vec("[ -~]{1,40}", 0..5)) {
        let lines: Vec<String> = lines.into_iter().filter(|l| !l.trim().is_empty()).collect();
        let body: Vec<String> = lines.iter().map(|l| hookq::queue::config::toml_quote(l)).collect();
        let text = format!("[hooks]\nafter_merge = [{}]\n", body.join(", "));
        let c = Config::parse(Path::new("c.toml"), text.as_bytes()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(c.hooks(Point::AfterMerge), lines.as_slice());
    }
}

fn check_config(bytes: &[u8]) -> Result<(), TestCaseError> {
    match Config::parse(Path::new("/ws/config.toml"), bytes) {
        Ok(c) => {
            prop_assert!(c.gate.command_timeout.as_secs() >= 1);
            prop_assert!(c.queue.max_interrupted_runs >= 1);
        }
        Err(ConfigError::Invalid { .. }) => {}
        Err(other) => prop_assert!(false, "unexpected error kind: {}", other),
    }
    if let Err(e) = Config::parse(Path::new("/ws/config.toml"), bytes) {
        let msg = e.to_string();
        prop_assert!(msg.starts_with("/ws/config.toml"), "{}", msg);
        prop_assert!(!msg.contains('\n'), "multi-line error {:?}", msg);
    }
    Ok(())
}
