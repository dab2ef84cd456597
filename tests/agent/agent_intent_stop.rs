//! The intent_stop rule on a table of real-looking last messages (fixtures/agent/intent_stop.tsv),
//! both ways: announced-and-not-done asks for a continuation; reported, asked and concluded do
//! not. Through the library rule and, for every row, through `hookq agent fire Stop`.

use crate::support::agent as agent_support;

use hookq::agent::intent_stop;
use serde_json::json;

struct Row {
    line: usize,
    expect: String,
    kind: String,
    message: String,
}

fn table() -> Vec<Row> {
    let text = std::fs::read_to_string(agent_support::fixtures().join("intent_stop.tsv")).unwrap();
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('#') && !l.trim().is_empty())
        .map(|(i, l)| {
            let mut cols = l.splitn(3, '\t');
            let (expect, kind) = (cols.next().unwrap(), cols.next().unwrap());
            let message = cols.next().unwrap_or("").replace("\\n", "\n");
            Row {
                line: i + 1,
                expect: expect.to_owned(),
                kind: kind.to_owned(),
                message,
            }
        })
        .collect()
}

#[test]
fn the_table_is_big_enough_and_goes_both_ways() {
    let rows = table();
    assert!(rows.len() >= 40, "{} rows", rows.len());
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/agent.md")).unwrap();
    let says = format!("holds {} real-looking last messages", rows.len());
    assert!(docs.contains(&says), "docs/agent.md should say {says:?}");
    for kind in ["announced", "reported", "asked", "concluded"] {
        assert!(
            rows.iter().filter(|r| r.kind == kind).count() >= 5,
            "{kind}"
        );
    }
    for r in &rows {
        let want = if r.kind == "announced" {
            "continue"
        } else {
            "end"
        };
        assert_eq!(
            r.expect, want,
            "line {}: kind and expectation disagree",
            r.line
        );
    }
}

#[test]
fn the_rule_on_every_row() {
    let mut wrong = Vec::new();
    for r in table() {
        let fires = intent_stop::announced(&r.message).is_some();
        if fires != (r.expect == "continue") {
            wrong.push(format!("line {} ({}): {:?}", r.line, r.kind, r.message));
        }
    }
    assert!(wrong.is_empty(), "misjudged:\n{}", wrong.join("\n"));
}

#[test]
fn every_row_through_the_cli() {
    let ws = agent_support::Ws::new();
    for r in table() {
        let d = ws.fire(
            "Stop",
            &json!({"session_id": "s", "last_assistant_message": r.message}),
            &[],
        );
        let verdict = if r.expect == "continue" {
            "continue"
        } else {
            "end"
        };
        assert_eq!(d.verdict(), verdict, "line {}: {:?}", r.line, r.message);
        if verdict == "continue" {
            let message = d.decision()["message"].as_str().unwrap();
            assert!(message.starts_with("Your last message ends by saying what you will do next"));
        }
    }
}
