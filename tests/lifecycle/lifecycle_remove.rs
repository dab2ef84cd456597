//! `hookq worktree remove` against real git repositories: four scopes per target, the
//! pre-remove gate, partial removal failures and post-remove finalization, dry runs.

use crate::support::lifecycle as lifecycle_common;

use lifecycle_common::{Ws, git, inline};

/// web and api, each with a worktree of `feature/x` made by hookq, and a recording hook at
/// every remove location (repository inline for web, native for api).
fn ws_with_worktrees() -> Ws {
    let q = |s: &str| serde_json::to_string(s).unwrap();
    let config = format!(
        r#"{{"repos": {{"web": {{"path": "repos/web", "hooks": {{"pre-remove": {r}, "post-remove": {r}}}}},
                     "api": {{"path": "repos/api"}}}},
            "hooks": {{"timeout": 1000}}}}"#,
        r = q(&inline("bash \"$RECORDER\""))
    );
    let mut ws = Ws::configured(&["web", "api"], Some(&config));
    let recorder = lifecycle_common::fixtures().join("record.sh");
    ws.env
        .push(("RECORDER".into(), recorder.display().to_string()));
    ws.run(&["worktree", "create", "feature/x"]).expect(0);
    for lc in ["pre-remove", "post-remove"] {
        ws.recorder(&format!("repos/api/.arashi/hooks/{lc}.sh"));
        ws.recorder(&format!(".arashi/hooks/{lc}.sh"));
        ws.recorder(&format!("~/.arashi/hooks/web/{lc}.sh"));
        ws.recorder(&format!("~/.arashi/hooks/api/{lc}.sh"));
        ws.recorder(&format!("~/.arashi/hooks/{lc}.sh"));
    }
    ws
}

#[test]
fn remove_runs_four_scopes_per_target_in_order() {
    let ws = ws_with_worktrees();
    ws.run(&["worktree", "remove", "feature/x"]).expect(0);
    let root = ws.root.display().to_string();
    let mut expected = Vec::new();
    for lc in ["pre-remove", "post-remove"] {
        for r in ["web", "api"] {
            let checkout = format!("{root}/repos/{r}");
            expected.push(format!("{lc}|repository|{r}|{checkout}"));
            expected.push(format!("{lc}|workspace|{r}|{root}"));
            expected.push(format!("{lc}|global-repository|{r}|{checkout}"));
            expected.push(format!("{lc}|global-shared|{r}|{checkout}"));
        }
    }
    assert_eq!(ws.order(), expected);
    for r in ["web", "api"] {
        assert!(!ws.root.join(format!("worktrees/{r}/feature/x")).exists());
        assert!(
            !git(&ws.repo(r), &["branch", "--list", "feature/x"]).is_empty(),
            "the branch stays"
        );
    }
    assert!(
        !ws.root.join("worktrees/web/feature").exists(),
        "empty folders go"
    );
    // Every run's environment, exactly: sixteen runs, four scopes, two targets, two
    // lifecycles, in the order above.
    let home = ws.home.display().to_string();
    let targets = format!(
        r#"[{{"repository":"api","branchName":"feature/x","worktreePath":"{root}/worktrees/api/feature/x"}},{{"repository":"web","branchName":"feature/x","worktreePath":"{root}/worktrees/web/feature/x"}}]"#
    );
    let mut n = 0;
    for lc in ["pre-remove", "post-remove"] {
        for r in ["web", "api"] {
            let checkout = format!("{root}/repos/{r}");
            for scope in [
                "repository",
                "workspace",
                "global-repository",
                "global-shared",
            ] {
                n += 1;
                let (cwd, source) = match scope {
                    // web's repository hook is inline: no source path.
                    "repository" if r == "web" => (checkout.clone(), None),
                    "repository" => (
                        checkout.clone(),
                        Some(format!("{checkout}/.arashi/hooks/{lc}.sh")),
                    ),
                    "workspace" => (root.clone(), Some(format!("{root}/.arashi/hooks/{lc}.sh"))),
                    "global-repository" => (
                        checkout.clone(),
                        Some(format!("{home}/.arashi/hooks/{r}/{lc}.sh")),
                    ),
                    _ => (
                        checkout.clone(),
                        Some(format!("{home}/.arashi/hooks/{lc}.sh")),
                    ),
                };
                let mut expected: std::collections::BTreeMap<String, String> = [
                    ("ARASHI_BRANCH_NAME", "feature/x".to_string()),
                    ("ARASHI_HOOK_EXECUTION_PATH", cwd),
                    ("ARASHI_HOOK_INPUT", "unavailable".into()),
                    ("ARASHI_HOOK_NAME", lc.into()),
                    ("ARASHI_HOOK_SCOPE", scope.into()),
                    ("ARASHI_HOOK_TARGET_REPOSITORY", r.into()),
                    ("ARASHI_HOOK_TARGET_REPO_PATH", checkout.clone()),
                    (
                        "ARASHI_HOOK_TARGET_WORKTREE_PATH",
                        format!("{root}/worktrees/{r}/feature/x"),
                    ),
                    ("ARASHI_HOOK_WORKSPACE_MODE", "configured".into()),
                    ("ARASHI_MAIN_REPO_PATH", root.clone()),
                    ("ARASHI_REMOVE_TARGETS_JSON", targets.clone()),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
                if let Some(source) = source {
                    expected.insert("ARASHI_HOOK_SOURCE_PATH".into(), source);
                }
                assert_eq!(ws.env_of(n), expected, "run {n}: {lc} {scope} for {r}");
            }
        }
    }
}

#[test]
fn a_failing_pre_remove_removes_nothing() {
    let ws = ws_with_worktrees();
    ws.native(
        "~/.arashi/hooks/api/pre-remove.sh",
        "bash \"$RECORDER\"; exit 9\n",
    );
    let before = ws.snapshot();
    let out = ws.run(&["worktree", "remove", "feature/x", "--json"]);
    out.expect(7);
    assert_eq!(ws.snapshot(), before);
    let j = out.json();
    let statuses: Vec<&str> = j["error"]["details"]["hookOutcomes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["status"].as_str().unwrap())
        .collect();
    // web's four ran, api's repository and workspace ran, global-repository failed, the
    // rest of pre-remove and all of post-remove are skipped.
    let mut expected = vec!["succeeded"; 6];
    expected.push("exited-nonzero");
    expected.extend(["skipped"; 9]);
    assert_eq!(statuses, expected);
    assert_eq!(ws.order().len(), 7);
    let removals = j["error"]["details"]["removals"].as_array().unwrap();
    assert!(removals.iter().all(|r| r["status"] == "skipped"));
}

#[test]
fn post_remove_runs_after_a_partial_removal_failure_and_the_command_fails() {
    let ws = ws_with_worktrees();
    // api's worktree has an untracked file: git refuses to remove it without --force.
    std::fs::write(ws.root.join("worktrees/api/feature/x/dirty.txt"), "d").unwrap();
    // The global-shared post-remove says what it finds: it runs after the removals.
    let seen = ws.tmp.path().join("seen");
    ws.native(
        "~/.arashi/hooks/post-remove.sh",
        &format!(
            "bash \"$RECORDER\"\nif [ -e \"$ARASHI_HOOK_TARGET_WORKTREE_PATH\" ]; then s=present; else s=gone; fi\necho \"$ARASHI_HOOK_TARGET_REPOSITORY $s\" >> {}\n",
            seen.display()
        ),
    );
    let out = ws.run(&["worktree", "remove", "feature/x"]);
    out.expect(8);
    assert_eq!(
        std::fs::read_to_string(&seen).unwrap(),
        "web gone\napi present\n"
    );
    assert!(!ws.root.join("worktrees/web/feature/x").exists());
    assert!(ws.root.join("worktrees/api/feature/x/dirty.txt").exists());
    let order = ws.order();
    assert_eq!(order.len(), 16, "every post-remove hook ran: {order:#?}");
    assert!(out.stdout.contains("api"), "{}", out.stdout);
    assert!(out.stderr.contains("cannot remove"), "{}", out.stderr);
    // --force removes it; only api is a target now.
    ws.run(&["worktree", "remove", "feature/x", "--force"])
        .expect(0);
    assert!(!ws.root.join("worktrees/api/feature/x").exists());
    ws.run(&["worktree", "remove", "feature/x"]).expect(4);
}

#[test]
fn a_timed_out_hook_stays_timed_out_when_another_fails_too() {
    let ws = ws_with_worktrees();
    ws.native(".arashi/hooks/post-remove.sh", "sleep 30\n");
    ws.native("~/.arashi/hooks/post-remove.sh", "exit 3\n");
    let out = ws.run(&["worktree", "remove", "feature/x", "--repo", "web", "--json"]);
    out.expect(7);
    let j = out.json();
    let by_scope: Vec<(String, String)> = j["error"]["details"]["hookOutcomes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["lifecycle"] == "post-remove")
        .map(|o| {
            (
                o["scope"].as_str().unwrap().to_string(),
                o["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        by_scope,
        [
            ("repository".to_string(), "succeeded".to_string()),
            ("workspace".into(), "timed-out".into()),
            ("global-repository".into(), "succeeded".into()),
            ("global-shared".into(), "exited-nonzero".into()),
        ]
    );
    lifecycle_common::schema::assert_valid(
        "ledger.schema.json",
        &j["error"]["details"]["hookOutcomes"],
    );
}

#[test]
fn remove_dry_run_previews_without_spawning() {
    let ws = ws_with_worktrees();
    let canary = ws.tmp.path().join("canary");
    ws.native(
        ".arashi/hooks/pre-remove.sh",
        &format!("touch {}\n", canary.display()),
    );
    let before = ws.snapshot();
    let out = ws.run(&["worktree", "remove", "feature/x", "--dry-run", "--json"]);
    out.expect(0);
    assert!(!canary.exists(), "a dry run spawned a hook");
    assert!(ws.order().is_empty());
    assert_eq!(ws.snapshot(), before);
    let j = out.json();
    assert_eq!(j["data"]["hookOutcomes"], serde_json::json!([]));
    let preview = j["data"]["hookPreview"].as_array().unwrap();
    assert_eq!(preview.len(), 16);
    assert_eq!(preview[0]["sourceKind"], "inline-config");
    assert_eq!(preview[0]["sourceOwnerKind"], "repository");
    assert_eq!(preview[0]["sourceOwnerName"], "web");
    assert_eq!(preview[0]["sourceScriptPath"], serde_json::Value::Null);
    assert_eq!(preview[1]["sourceKind"], "native-file");
    assert_eq!(preview[1]["sourceOwnerKind"], "workspace");
    let human = ws.run(&["worktree", "remove", "feature/x", "--dry-run"]);
    human.expect(0);
    assert!(human.stdout.contains("none is run in a dry run"));
    assert!(!canary.exists());
}
