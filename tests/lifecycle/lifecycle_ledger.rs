//! The outcome ledger: JSON checked against `fixtures/lifecycle/ledger.schema.json`, human
//! counts and failure blocks, hook output kept off JSON stdout, dry runs.

use crate::support::lifecycle as lifecycle_common;

use lifecycle_common::schema::{assert_valid, check};
use lifecycle_common::{Ws, inline};

fn q(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// web and api; web's post-create prints on both streams and exits `web_exit`.
fn ws(web_exit: i32) -> Ws {
    let config = format!(
        r#"{{"repos": {{"web": {{"path": "repos/web", "hooks": {{"post-create": {}}}}}, "api": {{"path": "repos/api"}}}},
            "hooks": {{"scripts": {{"pre-create": {}}}}}}}"#,
        q(&inline(&format!(
            "echo HOOK-STDOUT-LINE; echo HOOK-STDERR-LINE >&2; exit {web_exit}"
        ))),
        q(&inline("echo routine"))
    );
    let ws = Ws::configured(&["web", "api"], Some(&config));
    ws.native(".arashi/hooks/post-create.api.sh", "echo api-native\n");
    ws.native("~/.arashi/hooks/pre-remove.sh", "echo bye\n");
    ws
}

#[test]
fn json_success_and_failure_carry_the_ledger_and_never_hook_output() {
    let w = ws(0);
    let out = w.run(&["worktree", "create", "feature/a", "--json"]);
    out.expect(0);
    let j = out.json();
    assert_eq!(j["ok"], true);
    let outcomes = &j["data"]["hookOutcomes"];
    assert_valid("ledger.schema.json", outcomes);
    let rows = outcomes.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[1]["hookName"], "post-create.web");
    assert_eq!(rows[1]["sourceKind"], "inline-config");
    assert_eq!(rows[1]["sourceOwnerKind"], "repository");
    assert_eq!(rows[1]["sourceOwnerName"], "web");
    assert_eq!(rows[1]["sourceScriptPath"], serde_json::Value::Null);
    assert_eq!(rows[2]["sourceKind"], "native-file");
    assert_eq!(
        rows[2]["sourceScriptPath"],
        w.root
            .join(".arashi/hooks/post-create.api.sh")
            .display()
            .to_string()
    );
    assert!(rows.iter().all(|r| r["status"] == "succeeded"));
    for text in ["HOOK-STDOUT-LINE", "routine", "api-native"] {
        assert!(!out.stdout.contains(text), "{text} on JSON stdout");
    }
    // Remove's ledger too.
    let out = w.run(&["worktree", "remove", "feature/a", "--json"]);
    out.expect(0);
    assert_valid("ledger.schema.json", &out.json()["data"]["hookOutcomes"]);
    assert!(!out.stdout.contains("bye"));

    let w = ws(3);
    let out = w.run(&["worktree", "create", "feature/a", "--json"]);
    out.expect(7);
    let j = out.json();
    assert_eq!(j["ok"], false);
    assert_eq!(j["error"]["code"], "hook_failed");
    let outcomes = &j["error"]["details"]["hookOutcomes"];
    assert_valid("ledger.schema.json", outcomes);
    let rows = outcomes.as_array().unwrap();
    assert_eq!(rows[1]["status"], "exited-nonzero");
    assert_eq!(rows[1]["exitCode"], 3);
    assert_eq!(rows[2]["status"], "skipped");
    assert_eq!(
        j["error"]["details"]["rollbackWarnings"],
        serde_json::json!([])
    );
    assert!(!out.stdout.contains("HOOK-STDOUT-LINE") && !out.stdout.contains("HOOK-STDERR-LINE"));
    // The failed hook's output is not lost: it is on stderr.
    assert!(out.stderr.contains("HOOK-STDOUT-LINE") && out.stderr.contains("HOOK-STDERR-LINE"));
}

#[test]
fn human_output_counts_collapses_routine_rows_and_blocks_each_failure() {
    let w = ws(0);
    let out = w.run(&["worktree", "create", "feature/a"]);
    out.expect(0);
    assert!(
        out.stdout
            .contains("hooks: 3 succeeded, 0 skipped, 0 failed"),
        "{}",
        out.stdout
    );
    assert!(
        !out.stdout.contains("routine") && !out.stdout.contains("pre-create ("),
        "{}",
        out.stdout
    );

    let w = ws(3);
    let out = w.run(&["worktree", "create", "feature/a"]);
    out.expect(7);
    assert!(
        out.stdout
            .contains("hooks: 1 succeeded, 1 skipped, 1 failed"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("hook failed: post-create post-create.web (repository, web)"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(
            "source: inline repos.web.hooks.post-create (owned by repository web) (inline-config)"
        ),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("status: exited-nonzero (exited with 3)"),
        "{}",
        out.stdout
    );
    // The hook's own streams stay its own, and are not copied into the block.
    assert_eq!(out.stdout.matches("HOOK-STDOUT-LINE").count(), 1);
    assert!(!out.stdout.contains("HOOK-STDERR-LINE"));
    assert_eq!(out.stderr.matches("HOOK-STDERR-LINE").count(), 1);
}

#[test]
fn create_dry_run_discovers_nothing_and_returns_an_empty_ledger() {
    let w = ws(0);
    // A broken hook location would fail discovery: a dry run does none.
    w.native(".arashi/hooks/pre-create.sh", "true\n");
    let canary = w.tmp.path().join("canary");
    w.native(
        ".arashi/hooks/post-create.api.sh",
        &format!("touch {}\n", canary.display()),
    );
    let before = w.snapshot();
    let out = w.run(&["worktree", "create", "feature/a", "--dry-run", "--json"]);
    out.expect(0);
    let j = out.json();
    assert_eq!(j["data"]["hookOutcomes"], serde_json::json!([]));
    assert!(j["data"].get("hookPreview").is_none());
    assert_eq!(j["data"]["worktrees"].as_array().unwrap().len(), 2);
    assert_eq!(w.snapshot(), before);
    assert!(!canary.exists());
    let out = w.run(&["worktree", "create", "feature/a", "--dry-run"]);
    out.expect(0);
    assert!(out.stdout.contains("nothing was changed"));
    assert_eq!(w.snapshot(), before);
    // The same create for real is refused: the ambiguity above is found by discovery.
    w.run(&["worktree", "create", "feature/a"]).expect(9);
}

/// The schema checker itself: it accepts a good ledger and names each thing a bad one breaks.
#[test]
fn the_checker_catches_what_the_schema_forbids() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(lifecycle_common::fixtures().join("ledger.schema.json")).unwrap(),
    )
    .unwrap();
    let good = serde_json::json!([{
        "lifecycle": "pre-create", "scope": "workspace", "targetRepository": null,
        "hookName": "pre-create", "sourceKind": "inline-config", "sourceOwnerKind": "workspace",
        "sourceOwnerName": "ws", "sourceScriptPath": null, "status": "succeeded",
        "exitCode": null, "signal": null, "reason": null, "durationMs": 3
    }]);
    assert!(check(&schema, &good).is_empty());
    let mut bad = good.clone();
    bad[0]["status"] = "ok".into();
    bad[0]["durationMs"] = (-1).into();
    bad[0]["command"] = "echo".into();
    bad[0].as_object_mut().unwrap().remove("scope");
    assert_eq!(check(&schema, &bad).len(), 4, "{:?}", check(&schema, &bad));
}
