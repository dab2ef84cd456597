//! `hookq worktree remove` against real git repositories: four scopes per target, the
//! pre-remove gate, partial removal failures and post-remove finalization, dry runs, the
//! preflight that refuses what git would refuse, stops, and the layout folders it leaves.

use crate::support::lifecycle as lifecycle_common;

use std::time::Duration;

use lifecycle_common::{FORGEABLE, Ws, alive, git, inline, make_repo, pids_in};

/// web and api, each with a worktree of `feature/x` made by hookq, and a recording hook at
/// every remove location (repository inline for web, native for api). Hooks have a minute: a
/// timeout here only catches a hang.
fn ws_with_worktrees() -> Ws {
    ws_with_worktrees_timeout(60_000)
}

/// [`ws_with_worktrees`] with a hook timeout of `timeout_ms`.
fn ws_with_worktrees_timeout(timeout_ms: u64) -> Ws {
    let q = |s: &str| serde_json::to_string(s).unwrap();
    let config = format!(
        r#"{{"repos": {{"web": {{"path": "repos/web", "hooks": {{"pre-remove": {r}, "post-remove": {r}}}}},
                     "api": {{"path": "repos/api"}}}},
            "hooks": {{"timeout": {timeout_ms}}}}}"#,
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
    let mut ws = ws_with_worktrees();
    // arashi's historical aliases and aggregates are hookq's: nothing inherited sets them.
    for name in FORGEABLE {
        ws.env.push((name.into(), "forged".into()));
    }
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
    let worktrees = format!("{root}/worktrees/api/feature/x,{root}/worktrees/web/feature/x");
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
                    // arashi's aliases name this hook's one target, whatever the scope.
                    ("ARASHI_REPO_NAME", r.into()),
                    ("ARASHI_REPO_PATH", checkout.clone()),
                    (
                        "ARASHI_WORKTREE_PATH",
                        format!("{root}/worktrees/{r}/feature/x"),
                    ),
                    // arashi's aggregates describe the whole command.
                    ("ARASHI_OPERATION", "remove".into()),
                    ("ARASHI_REMOVE_TARGET_REPOSITORIES", "api,web".into()),
                    ("ARASHI_REMOVE_TARGET_BRANCHES", "feature/x".into()),
                    ("ARASHI_REMOVE_TARGET_WORKTREES", worktrees.clone()),
                    ("ARASHI_REMOVE_TOTAL_REPOSITORIES", "2".into()),
                    ("ARASHI_REMOVE_TOTAL_BRANCHES", "1".into()),
                    ("ARASHI_REMOVE_TOTAL_WORKTREES", "2".into()),
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

/// The `ARASHI_*` variables of recorded run `n` that arashi 1.x hooks read.
fn compat_of(ws: &Ws, n: usize) -> Vec<(String, String)> {
    let names = ["ARASHI_BRANCH_NAME", "ARASHI_REMOVE_TARGETS_JSON"];
    ws.env_of(n)
        .into_iter()
        .filter(|(k, _)| FORGEABLE.contains(&k.as_str()) || names.contains(&k.as_str()))
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = list
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    v.sort();
    v
}

#[test]
fn arashi_aggregates_join_sorted_distinct_values_with_commas_and_count_them() {
    // A workspace root and a branch holding commas and spaces; three repositories whose
    // names sort differently by scalar value than by a locale ("Zed" before "api"); web's
    // worktree switched to another branch since, api's detached.
    let mut ws = Ws::bare();
    ws.root = ws.tmp.path().join("a ws, v2");
    for r in ["web", "api", "Zed"] {
        make_repo(&ws.root.join("repos").join(r), 1);
    }
    ws.write_config(
        r#"{"repos": {"web": {"path": "repos/web"}, "api": {"path": "repos/api"},
                      "Zed": {"path": "repos/Zed"}}}"#,
    );
    let recorder = lifecycle_common::fixtures().join("record.sh");
    ws.env
        .push(("RECORDER".into(), recorder.display().to_string()));
    ws.run(&["worktree", "create", "feat,x"]).expect(0);
    let root = ws.root.display().to_string();
    let wt = |r: &str| format!("{root}/worktrees/{r}/feat,x");
    git(
        std::path::Path::new(&wt("web")),
        &["switch", "-q", "-c", "other,b"],
    );
    git(
        std::path::Path::new(&wt("api")),
        &["switch", "-q", "--detach"],
    );
    ws.recorder("~/.arashi/hooks/pre-remove.sh");
    ws.run(&["worktree", "remove", "feat,x"]).expect(0);
    assert_eq!(ws.order().len(), 3);
    let json = format!(
        r#"[{{"repository":"Zed","branchName":"feat,x","worktreePath":"{}"}},{{"repository":"api","branchName":null,"worktreePath":"{}"}},{{"repository":"web","branchName":"other,b","worktreePath":"{}"}}]"#,
        wt("Zed"),
        wt("api"),
        wt("web")
    );
    let worktrees = format!("{},{},{}", wt("Zed"), wt("api"), wt("web"));
    let command = [
        ("ARASHI_OPERATION", "remove"),
        ("ARASHI_REMOVE_TARGETS_JSON", json.as_str()),
        ("ARASHI_REMOVE_TARGET_REPOSITORIES", "Zed,api,web"),
        // api's detached worktree has no branch: two branches, four comma-separated words.
        ("ARASHI_REMOVE_TARGET_BRANCHES", "feat,x,other,b"),
        ("ARASHI_REMOVE_TARGET_WORKTREES", worktrees.as_str()),
        ("ARASHI_REMOVE_TOTAL_REPOSITORIES", "3"),
        ("ARASHI_REMOVE_TOTAL_BRANCHES", "2"),
        ("ARASHI_REMOVE_TOTAL_WORKTREES", "3"),
    ];
    // In config order, each run's aliases name its own target.
    for (n, r, branch) in [
        (1, "web", Some("other,b")),
        (2, "api", None),
        (3, "Zed", Some("feat,x")),
    ] {
        let checkout = format!("{root}/repos/{r}");
        let worktree = wt(r);
        let mut want = command.to_vec();
        want.extend([
            ("ARASHI_REPO_NAME", r),
            ("ARASHI_REPO_PATH", checkout.as_str()),
            ("ARASHI_WORKTREE_PATH", worktree.as_str()),
        ]);
        if let Some(b) = branch {
            want.push(("ARASHI_BRANCH_NAME", b));
        }
        assert_eq!(compat_of(&ws, n), pairs(&want), "run {n} for {r}");
    }
}

#[test]
fn a_standalone_name_with_a_comma_is_one_repository_in_the_aggregates() {
    let ws = Ws::bare();
    let main = ws.root.join("my, app");
    make_repo(&main, 1);
    let mut ws = ws;
    let recorder = lifecycle_common::fixtures().join("record.sh");
    ws.env
        .push(("RECORDER".into(), recorder.display().to_string()));
    ws.recorder("~/.arashi/hooks/post-create.sh");
    ws.recorder("~/.arashi/hooks/post-remove.sh");
    ws.run_in(&main, &["worktree", "create", "b,1"]).expect(0);
    ws.run_in(&main, &["worktree", "remove", "b,1"]).expect(0);
    let main_s = main.display().to_string();
    let worktree = format!("{}/my, app.worktrees/b,1", ws.root.display());
    assert_eq!(
        compat_of(&ws, 1),
        pairs(&[
            ("ARASHI_BRANCH_NAME", "b,1"),
            ("ARASHI_REPO_NAME", "my, app"),
            ("ARASHI_REPO_PATH", &main_s),
            ("ARASHI_WORKTREE_PATH", &worktree),
        ])
    );
    let json =
        format!(r#"[{{"repository":"my, app","branchName":"b,1","worktreePath":"{worktree}"}}]"#);
    assert_eq!(
        compat_of(&ws, 2),
        pairs(&[
            ("ARASHI_BRANCH_NAME", "b,1"),
            ("ARASHI_REPO_NAME", "my, app"),
            ("ARASHI_REPO_PATH", &main_s),
            ("ARASHI_WORKTREE_PATH", &worktree),
            ("ARASHI_OPERATION", "remove"),
            ("ARASHI_REMOVE_TARGETS_JSON", &json),
            // Lossy: one repository whose name reads as two words; the total says one.
            ("ARASHI_REMOVE_TARGET_REPOSITORIES", "my, app"),
            ("ARASHI_REMOVE_TARGET_BRANCHES", "b,1"),
            ("ARASHI_REMOVE_TARGET_WORKTREES", &worktree),
            ("ARASHI_REMOVE_TOTAL_REPOSITORIES", "1"),
            ("ARASHI_REMOVE_TOTAL_BRANCHES", "1"),
            ("ARASHI_REMOVE_TOTAL_WORKTREES", "1"),
        ])
    );
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
    let statuses = lifecycle_common::statuses(&j["error"]["details"]["hookOutcomes"]);
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
    // api's global-repository pre-remove leaves an untracked file in api's worktree, after the
    // preflight found it clean: git refuses to remove it without --force.
    ws.native(
        "~/.arashi/hooks/api/pre-remove.sh",
        "bash \"$RECORDER\"; echo d > \"$ARASHI_HOOK_TARGET_WORKTREE_PATH/dirty.txt\"\n",
    );
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
    ws.recorder("~/.arashi/hooks/api/pre-remove.sh");
    ws.run(&["worktree", "remove", "feature/x", "--force"])
        .expect(0);
    assert!(!ws.root.join("worktrees/api/feature/x").exists());
    ws.run(&["worktree", "remove", "feature/x"]).expect(4);
}

#[test]
fn a_timed_out_hook_stays_timed_out_when_another_fails_too() {
    // 5 s: long enough for every other hook to end by itself on a loaded machine, short
    // against the 30 s of the one that must time out.
    let ws = ws_with_worktrees_timeout(5_000);
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

/// Without --force, a worktree with modified or untracked files is refused before any hook
/// runs (exit 9), naming the worktree and the files; --force removes it with them. A locked
/// worktree, which git refuses even then, is refused the same way.
#[test]
fn a_dirty_worktree_is_refused_before_any_hook_runs() {
    let ws = ws_with_worktrees();
    let api = ws.root.join("worktrees/api/feature/x");
    std::fs::write(api.join("f0.txt"), "changed\n").unwrap();
    std::fs::write(api.join("new.txt"), "mine\n").unwrap();
    let before = ws.snapshot();
    for args in [&["--json"][..], &["--dry-run", "--json"]] {
        let out = ws.run(&[&["worktree", "remove", "feature/x"][..], args].concat());
        out.expect(9);
        let j = out.json();
        assert_eq!(j["error"]["code"], "worktree_dirty");
        let msg = j["error"]["message"].as_str().unwrap();
        assert_eq!(
            msg,
            format!(
                "repository api: worktree {} has modified or untracked files (modified: f0.txt; \
                 untracked: new.txt); commit, stash or delete them, or pass --force to remove it \
                 with them",
                api.display()
            )
        );
        assert_eq!(
            j["error"]["details"]["problems"][0]["code"],
            "worktree_dirty"
        );
    }
    let human = ws.run(&["worktree", "remove", "feature/x"]);
    human.expect(9);
    assert!(
        human.stderr.contains(&format!(
            "error: repository api: worktree {} has modified or untracked files",
            api.display()
        )),
        "{}",
        human.stderr
    );
    assert!(ws.order().is_empty(), "a hook ran: {:?}", ws.order());
    assert_eq!(ws.snapshot(), before);
    assert!(api.join("new.txt").exists());

    ws.run(&["worktree", "remove", "feature/x", "--force"])
        .expect(0);
    assert!(!api.exists());
    assert_eq!(ws.order().len(), 16, "every hook ran once");

    // A locked worktree: refused with or without --force (git wants it unlocked first).
    ws.run(&["worktree", "create", "locked"]).expect(0);
    let web = ws.root.join("worktrees/web/locked");
    git(
        &ws.repo("web"),
        &["worktree", "lock", &web.display().to_string()],
    );
    let lines = ws.order().len();
    for force in [&[][..], &["--force"]] {
        let out = ws.run(&[&["worktree", "remove", "locked", "--json"][..], force].concat());
        out.expect(9);
        let j = out.json();
        assert_eq!(j["error"]["code"], "worktree_locked");
        assert!(
            j["error"]["message"]
                .as_str()
                .unwrap()
                .contains(&format!("worktree {} is locked", web.display())),
            "{j}"
        );
    }
    assert_eq!(ws.order().len(), lines, "no hook ran");
    assert!(web.exists());
}

/// Removing the last worktree under hookq's layout leaves no empty layout folder behind
/// (`worktrees/<repo>/`, `worktrees/`, `<repo>.worktrees/`), and removes no folder that still
/// holds anything, nor one outside the layout.
#[test]
fn remove_leaves_no_empty_layout_folder_and_nothing_else_goes() {
    // Configured: worktrees/ and worktrees/<repo>/ go once empty.
    let ws = Ws::configured(&["web", "api"], None);
    ws.run(&["worktree", "create", "feature/a"]).expect(0);
    ws.run(&["worktree", "create", "b"]).expect(0);
    ws.run(&["worktree", "remove", "feature/a"]).expect(0);
    for r in ["web", "api"] {
        assert!(ws.root.join(format!("worktrees/{r}/b")).is_dir());
        assert!(!ws.root.join(format!("worktrees/{r}/feature")).exists());
    }
    // A file of the user's keeps api's folder, and so worktrees/.
    std::fs::write(ws.root.join("worktrees/api/notes.txt"), "mine").unwrap();
    ws.run(&["worktree", "remove", "b"]).expect(0);
    assert!(
        !ws.root.join("worktrees/web").exists(),
        "an empty layout folder stayed"
    );
    assert_eq!(
        std::fs::read_to_string(ws.root.join("worktrees/api/notes.txt")).unwrap(),
        "mine"
    );
    std::fs::remove_file(ws.root.join("worktrees/api/notes.txt")).unwrap();
    ws.run(&["worktree", "create", "c", "--repo", "api"])
        .expect(0);
    ws.run(&["worktree", "remove", "c"]).expect(0);
    assert!(
        !ws.root.join("worktrees").exists(),
        "an empty layout folder stayed"
    );
    assert!(ws.root.join("repos/api").is_dir() && ws.root.join(".arashi").is_dir());

    // A worktree git lists outside the layout: its emptied folder is the user's, and stays.
    let elsewhere = ws.root.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    git(
        &ws.repo("web"),
        &["worktree", "add", "-q", "-b", "d", "../../elsewhere/d"],
    );
    ws.run(&["worktree", "remove", "d"]).expect(0);
    assert!(!elsewhere.join("d").exists());
    assert!(
        elsewhere.is_dir(),
        "a folder outside the layout was removed"
    );

    // Standalone: <repo>.worktrees/ goes once empty, and nothing beside or above it.
    let ws = Ws::bare();
    let main = ws.root.join("app");
    make_repo(&main, 3);
    ws.run_in(&main, &["worktree", "create", "one"]).expect(0);
    ws.run_in(&main, &["worktree", "create", "two/deep"])
        .expect(0);
    ws.run_in(&main, &["worktree", "remove", "one"]).expect(0);
    assert!(ws.root.join("app.worktrees/two/deep").is_dir());
    ws.run_in(&main, &["worktree", "remove", "two/deep"])
        .expect(0);
    assert!(
        !ws.root.join("app.worktrees").exists(),
        "an empty layout folder stayed"
    );
    assert!(ws.root.is_dir() && main.is_dir());
}

/// web with a worktree of `feature/x` and the remove hooks `hooks` (`(path, body)`, relative to
/// the root), each bounded by 10 minutes (a stop ends them, not the timeout), with `$READY` set
/// for them; returns it and `$READY`.
fn signal_ws(hooks: &[(&str, &str)]) -> (Ws, std::path::PathBuf) {
    let mut ws = Ws::configured(
        &["web"],
        Some(r#"{"repos": {"web": {"path": "repos/web"}}, "hooks": {"timeout": 600000}}"#),
    );
    ws.run(&["worktree", "create", "feature/x"]).expect(0);
    for (path, body) in hooks {
        ws.native(path, body);
    }
    let ready = ws.tmp.path().join("ready");
    ws.env.push(("READY".into(), ready.display().to_string()));
    (ws, ready)
}

/// Writes the hook's pid to `$READY`, then sleeps `secs`.
fn sleeper(secs: u32) -> String {
    format!("echo \"$$\" > \"$READY.tmp\"; mv \"$READY.tmp\" \"$READY\"; sleep {secs}\n")
}

/// One SIGTERM while a pre-remove hook hangs ends that hook at once and aborts the removal at
/// its gate: nothing is removed, no other hook runs, and the command says it was stopped.
#[test]
fn one_sigterm_during_a_pre_remove_hook_removes_nothing() {
    let canary = "touch \"$READY.canary\"\n";
    let (ws, ready) = signal_ws(&[
        ("repos/web/.arashi/hooks/pre-remove.sh", &sleeper(300)),
        (".arashi/hooks/pre-remove.sh", canary),
        (".arashi/hooks/post-remove.sh", canary),
    ]);
    let before = ws.snapshot();
    let (out, took) = ws.run_signalled(
        &["worktree", "remove", "feature/x", "--json"],
        &ready,
        libc::SIGTERM,
    );
    out.expect(7);
    assert!(took < Duration::from_secs(60), "the stop took {took:?}");
    assert!(pids_in(&ready).iter().all(|&p| !alive(p)));
    assert_eq!(ws.snapshot(), before, "something was removed");
    assert!(
        !ws.tmp.path().join("ready.canary").exists(),
        "a hook ran after the stop"
    );
    let j = out.json();
    assert_eq!(j["error"]["code"], "stopped");
    assert_eq!(
        j["error"]["message"],
        "remove of branch feature/x failed: stopped by a signal while hook pre-remove (repository, web) ran; nothing was removed"
    );
    let statuses = lifecycle_common::statuses(&j["error"]["details"]["hookOutcomes"]);
    assert_eq!(statuses, ["exited-nonzero", "skipped", "skipped"]);
    let removals = j["error"]["details"]["removals"].as_array().unwrap();
    assert_eq!(removals[0]["status"], "skipped");
    assert_eq!(removals[0]["reason"], "stopped by a signal");
}

/// One SIGINT during the last pre-remove hook still closes the gate: the removal that would
/// have followed does not happen, and no post-remove hook runs.
#[test]
fn one_sigint_during_the_last_pre_remove_hook_removes_nothing() {
    let (ws, ready) = signal_ws(&[
        (".arashi/hooks/pre-remove.sh", &sleeper(300)),
        (".arashi/hooks/post-remove.sh", "touch \"$READY.canary\"\n"),
    ]);
    let before = ws.snapshot();
    let (out, took) = ws.run_signalled(&["worktree", "remove", "feature/x"], &ready, libc::SIGINT);
    out.expect(7);
    assert!(took < Duration::from_secs(60), "the stop took {took:?}");
    assert_eq!(ws.snapshot(), before, "something was removed");
    assert!(
        !ws.tmp.path().join("ready.canary").exists(),
        "a hook ran after the stop"
    );
    assert!(
        out.stderr.contains(
            "error: remove of branch feature/x failed: stopped by a signal while hook pre-remove (workspace, web) ran; nothing was removed"
        ),
        "{}",
        out.stderr
    );
}

/// One SIGTERM during a post-remove hook ends it and the command: the worktree was removed
/// already, the post-remove hooks after it are skipped, and the command says it was stopped.
#[test]
fn one_sigterm_during_a_post_remove_hook_skips_the_rest() {
    let (ws, ready) = signal_ws(&[
        ("repos/web/.arashi/hooks/post-remove.sh", &sleeper(300)),
        (".arashi/hooks/post-remove.sh", "touch \"$READY.canary\"\n"),
    ]);
    let (out, took) = ws.run_signalled(
        &["worktree", "remove", "feature/x", "--json"],
        &ready,
        libc::SIGTERM,
    );
    out.expect(7);
    assert!(took < Duration::from_secs(60), "the stop took {took:?}");
    assert!(pids_in(&ready).iter().all(|&p| !alive(p)));
    assert!(
        !ws.root.join("worktrees").exists(),
        "the worktree was removed before"
    );
    assert!(
        !ws.tmp.path().join("ready.canary").exists(),
        "a hook ran after the stop"
    );
    let j = out.json();
    assert_eq!(j["error"]["code"], "stopped");
    assert_eq!(
        j["error"]["message"],
        "remove of branch feature/x failed: stopped by a signal after 1 of 1 worktree(s) were removed; the hooks not yet run were skipped"
    );
    let statuses = lifecycle_common::statuses(&j["error"]["details"]["hookOutcomes"]);
    assert_eq!(statuses, ["exited-nonzero", "skipped"]);
    assert_eq!(j["error"]["details"]["removals"][0]["status"], "removed");
}
