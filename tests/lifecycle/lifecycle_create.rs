//! `hookq worktree create` against real git repositories: order, working directories, the
//! environment, fail-fast and rollback.

use crate::support::lifecycle as lifecycle_common;

use std::time::Duration;

use lifecycle_common::{FORGEABLE, Ws, alive, git, inline, pids_in};

const RECORD: &str = "bash \"$RECORDER\"";

/// A workspace of web and api where every create location holds a recording hook, inline
/// for some and native for others, plus decoys that must not run.
fn recording_ws(post_create_ws: &str) -> Ws {
    // Written by hand: the repositories run in file order, web first.
    let q = |s: &str| serde_json::to_string(s).unwrap();
    let config = format!(
        r#"{{"repos": {{"web": {{"path": "repos/web", "hooks": {{"pre-create": {}}}}},
                     "api": {{"path": "repos/api"}}}},
            "hooks": {{"scripts": {{"post-create": {}}}}}}}"#,
        q(&inline(RECORD)),
        q(&inline(post_create_ws))
    );
    let mut ws = Ws::configured(&["web", "api"], Some(&config));
    ws.recorder(".arashi/hooks/pre-create.sh");
    ws.recorder(".arashi/hooks/post-create.web.sh");
    ws.recorder(".arashi/hooks/pre-create.api.sh");
    ws.recorder(".arashi/hooks/post-create.api.sh");
    // Decoys: Windows variants, repository-local and user-global create scripts, examples.
    for decoy in [
        ".arashi/hooks/pre-create.ps1",
        ".arashi/hooks/pre-create.cmd",
        ".arashi/hooks/pre-create.bat",
        ".arashi/hooks/post-create.sh.example",
        "repos/web/.arashi/hooks/pre-create.sh",
        "~/.arashi/hooks/pre-create.sh",
        "~/.arashi/hooks/web/post-create.sh",
    ] {
        ws.native(decoy, "echo DECOY >> \"$ORDER_LOG\"\n");
    }
    let recorder = lifecycle_common::fixtures().join("record.sh");
    ws.env
        .push(("RECORDER".into(), recorder.display().to_string()));
    ws
}

#[test]
fn create_runs_every_hook_in_order_in_its_working_directory() {
    let ws = recording_ws(RECORD);
    ws.run(&["worktree", "create", "feature/auth"]).expect(0);
    let root = ws.root.display().to_string();
    let wt = |r: &str| format!("{root}/worktrees/{r}/feature/auth");
    assert_eq!(
        ws.order(),
        [
            format!("pre-create|workspace|-|{root}"),
            format!("pre-create.web|repository|web|{}", wt("web")),
            format!("post-create.web|repository|web|{}", wt("web")),
            format!("pre-create.api|repository|api|{}", wt("api")),
            format!("post-create.api|repository|api|{}", wt("api")),
            format!("post-create|workspace|-|{root}"),
        ]
    );
    for r in ["web", "api"] {
        let list = git(&ws.repo(r), &["worktree", "list", "--porcelain"]);
        assert!(list.contains(&format!("worktree {}", wt(r))), "{list}");
        assert!(list.contains("branch refs/heads/feature/auth"), "{list}");
    }
}

#[test]
fn each_scope_gets_exactly_its_environment() {
    let mut ws = recording_ws(RECORD);
    // Inherited look-alikes and git overrides must not reach a hook or confuse hookq's git.
    ws.env.push(("ARASHI_HOOK_SCOPE".into(), "forged".into()));
    ws.env
        .push(("ARASHI_PARENT_REPO_PATH".into(), "/forged".into()));
    ws.env
        .push(("ARASHI_HOOK_TARGET_REPOSITORY".into(), "forged".into()));
    // arashi's historical aliases and remove aggregates are hookq's to set, or to leave unset.
    for name in FORGEABLE {
        ws.env.push((name.into(), "forged".into()));
    }
    ws.env.push(("GIT_DIR".into(), "/nowhere".into()));
    ws.run(&["worktree", "create", "feature/auth"]).expect(0);
    let root = ws.root.display().to_string();
    let ws_pre = ws.env_of(1);
    let expected_ws: std::collections::BTreeMap<String, String> = [
        ("ARASHI_BRANCH_NAME", "feature/auth".to_string()),
        ("ARASHI_HOOK_EXECUTION_PATH", root.clone()),
        ("ARASHI_HOOK_INPUT", "unavailable".into()),
        ("ARASHI_HOOK_NAME", "pre-create".into()),
        ("ARASHI_HOOK_SCOPE", "workspace".into()),
        (
            "ARASHI_HOOK_SOURCE_PATH",
            format!("{root}/.arashi/hooks/pre-create.sh"),
        ),
        ("ARASHI_HOOK_WORKSPACE_MODE", "configured".into()),
        ("ARASHI_MAIN_REPO_PATH", root.clone()),
        // arashi's alias: a workspace create hook's repository path is the root; it has no
        // repository name and no worktree.
        ("ARASHI_REPO_PATH", root.clone()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(ws_pre, expected_ws);
    // The inline repository hook: no source path; every target field.
    let web_pre = ws.env_of(2);
    let wt = format!("{root}/worktrees/web/feature/auth");
    let expected_web: std::collections::BTreeMap<String, String> = [
        ("ARASHI_BRANCH_NAME", "feature/auth".to_string()),
        ("ARASHI_HOOK_EXECUTION_PATH", wt.clone()),
        ("ARASHI_HOOK_INPUT", "unavailable".into()),
        ("ARASHI_HOOK_NAME", "pre-create.web".into()),
        ("ARASHI_HOOK_SCOPE", "repository".into()),
        ("ARASHI_HOOK_TARGET_REPOSITORY", "web".into()),
        ("ARASHI_HOOK_TARGET_REPO_PATH", format!("{root}/repos/web")),
        ("ARASHI_HOOK_TARGET_WORKTREE_PATH", wt.clone()),
        ("ARASHI_HOOK_WORKSPACE_MODE", "configured".into()),
        ("ARASHI_MAIN_REPO_PATH", root.clone()),
        ("ARASHI_PARENT_REPO_PATH", root.clone()),
        // arashi's aliases: the child's name, and its new worktree as both paths.
        ("ARASHI_REPO_NAME", "web".into()),
        ("ARASHI_REPO_PATH", wt.clone()),
        ("ARASHI_WORKTREE_PATH", wt.clone()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(web_pre, expected_web);
    // The native repository hooks: the same, with their own name and source path.
    for (n, r, name) in [
        (3, "web", "post-create.web"),
        (4, "api", "pre-create.api"),
        (5, "api", "post-create.api"),
    ] {
        let wt = format!("{root}/worktrees/{r}/feature/auth");
        let mut expected = expected_web.clone();
        for (k, v) in [
            ("ARASHI_HOOK_NAME", name.to_string()),
            (
                "ARASHI_HOOK_SOURCE_PATH",
                format!("{root}/.arashi/hooks/{name}.sh"),
            ),
            ("ARASHI_HOOK_EXECUTION_PATH", wt.clone()),
            ("ARASHI_HOOK_TARGET_REPOSITORY", r.into()),
            ("ARASHI_HOOK_TARGET_REPO_PATH", format!("{root}/repos/{r}")),
            ("ARASHI_HOOK_TARGET_WORKTREE_PATH", wt.clone()),
            ("ARASHI_REPO_NAME", r.into()),
            ("ARASHI_REPO_PATH", wt.clone()),
            ("ARASHI_WORKTREE_PATH", wt),
        ] {
            expected.insert(k.into(), v);
        }
        assert_eq!(ws.env_of(n), expected, "run {n}");
    }
    // The inline workspace post-create: the workspace pre-create's, without a source path.
    let mut expected = expected_ws.clone();
    expected.remove("ARASHI_HOOK_SOURCE_PATH");
    expected.insert("ARASHI_HOOK_NAME".into(), "post-create".into());
    assert_eq!(ws.env_of(6), expected);
}

#[test]
fn a_failing_or_timed_out_workspace_pre_create_changes_nothing() {
    // The hook that must exit has a minute (a timeout there only catches a hang); the one that
    // must time out, 300 ms against its 30 s of sleep.
    for (hook, timeout, status) in [
        ("exit 3", 60_000, "exited-nonzero"),
        ("sleep 30", 300, "timed-out"),
    ] {
        let config = serde_json::json!({
            "repos": {"web": {"path": "repos/web"}, "api": {"path": "repos/api"}},
            "hooks": {"timeout": timeout, "scripts": {"pre-create": inline(hook)}}
        });
        let ws = Ws::configured(&["web", "api"], Some(&config.to_string()));
        ws.recorder(".arashi/hooks/post-create.web.sh");
        let before = ws.snapshot();
        let out = ws.run(&["worktree", "create", "feature/x", "--json"]);
        out.expect(7);
        assert_eq!(ws.snapshot(), before, "{hook}");
        assert!(ws.order().is_empty(), "no later hook ran");
        let j = out.json();
        let outcomes = j["error"]["details"]["hookOutcomes"].as_array().unwrap();
        assert_eq!(outcomes[0]["status"], status, "{hook}");
        assert_eq!(outcomes[1]["status"], "skipped");
        assert!(!ws.root.join("worktrees").exists());
        // The human block names how it ended once: not "timed-out (timed out)".
        let out = ws.run(&["worktree", "create", "feature/x"]);
        out.expect(7);
        let line = out
            .stdout
            .lines()
            .find(|l| l.trim_start().starts_with("status: "))
            .unwrap_or_else(|| panic!("no status line: {}", out.stdout));
        let want = if status == "timed-out" {
            "status: timed-out after "
        } else {
            "status: exited-nonzero (exited with 3) after "
        };
        assert!(line.trim_start().starts_with(want), "{line}");
    }
}

#[test]
fn a_failure_after_the_first_change_rolls_back_everything_this_create_made() {
    // The last repository's post-create fails: both new worktrees and branches go.
    let mut ws = recording_ws(RECORD);
    let before = ws.snapshot();
    ws.env.push(("HOOK_EXIT".into(), "0".into()));
    ws.native(
        ".arashi/hooks/post-create.api.sh",
        "bash \"$RECORDER\"; exit 4\n",
    );
    let out = ws.run(&["worktree", "create", "feature/auth"]);
    out.expect(7);
    assert_eq!(ws.snapshot(), before);
    assert!(
        !ws.root.join("worktrees").exists(),
        "the folders it made go too"
    );
    assert!(
        out.stdout
            .contains("hooks: 4 succeeded, 1 skipped, 1 failed"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("rolled back: removed worktree"),
        "{}",
        out.stdout
    );
    assert!(out.stderr.contains("error: create of branch feature/auth failed: hook post-create.api (repository, api) exited with 4"), "{}", out.stderr);
}

#[test]
fn an_existing_branch_keeps_its_commits_and_an_existing_path_is_never_touched() {
    let ws = recording_ws("exit 5");
    // web has the branch already, one commit ahead of main.
    git(&ws.repo("web"), &["branch", "feature/auth"]);
    git(
        &ws.repo("web"),
        &["worktree", "add", "-q", "../../scratch", "feature/auth"],
    );
    let scratch = ws.root.join("scratch");
    std::fs::write(scratch.join("ahead.txt"), "x").unwrap();
    git(&scratch, &["add", "ahead.txt"]);
    git(&scratch, &["commit", "-qm", "ahead"]);
    git(&ws.repo("web"), &["worktree", "remove", "../../scratch"]);
    let tip = git(&ws.repo("web"), &["rev-parse", "feature/auth"]);
    // An unrelated file sits where api's worktree folders go.
    std::fs::create_dir_all(ws.root.join("worktrees/api")).unwrap();
    std::fs::write(ws.root.join("worktrees/api/keep.txt"), "mine").unwrap();
    let before = ws.snapshot();
    let out = ws.run(&["worktree", "create", "feature/auth"]);
    out.expect(7);
    assert_eq!(ws.snapshot(), before);
    assert_eq!(git(&ws.repo("web"), &["rev-parse", "feature/auth"]), tip);
    assert_eq!(
        std::fs::read_to_string(ws.root.join("worktrees/api/keep.txt")).unwrap(),
        "mine"
    );
    // A path that exists is refused before anything runs.
    std::fs::create_dir_all(ws.root.join("worktrees/api/feature/auth")).unwrap();
    let before = ws.snapshot();
    let lines = ws.order().len();
    let out = ws.run(&["worktree", "create", "feature/auth", "--json"]);
    out.expect(9);
    assert_eq!(out.json()["error"]["code"], "path_exists");
    assert_eq!(ws.snapshot(), before);
    assert_eq!(ws.order().len(), lines, "no hook ran");
}

#[test]
fn a_rollback_step_that_fails_is_a_rollback_warning() {
    // The hook checks the new branch out in a worktree of its own, so the rollback cannot
    // delete the branch: that step is reported, the others still run.
    let ws = recording_ws("exit 6");
    let elsewhere = ws.tmp.path().join("elsewhere");
    ws.native(
        ".arashi/hooks/post-create.api.sh",
        &format!(
            "git checkout -q --detach && git worktree add -q {} feature/auth\n",
            elsewhere.display()
        ),
    );
    let out = ws.run(&["worktree", "create", "feature/auth", "--json"]);
    out.expect(7);
    let j = out.json();
    let warnings = j["error"]["details"]["rollbackWarnings"]
        .as_array()
        .unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0]
            .as_str()
            .unwrap()
            .contains("cannot delete branch feature/auth"),
        "{warnings:?}"
    );
    assert!(
        out.stderr
            .contains("warning: rollback: cannot delete branch"),
        "{}",
        out.stderr
    );
    // Everything else went: web's branch and both of hookq's worktrees.
    assert!(!ws.root.join("worktrees").exists());
    assert!(git(&ws.repo("web"), &["branch", "--list", "feature/auth"]).is_empty());
}

#[test]
fn no_hooks_skips_the_create_hooks_and_base_picks_the_start() {
    let ws = recording_ws(RECORD);
    let first = git(&ws.repo("web"), &["rev-parse", "HEAD"]);
    std::fs::write(ws.repo("web").join("next.txt"), "n").unwrap();
    git(&ws.repo("web"), &["add", "next.txt"]);
    git(&ws.repo("web"), &["commit", "-qm", "next"]);
    let out = ws.run(&[
        "worktree",
        "create",
        "topic",
        "--no-hooks",
        "--repo",
        "web",
        "--base",
        first.trim(),
        "--json",
    ]);
    out.expect(0);
    assert!(ws.order().is_empty());
    let j = out.json();
    assert_eq!(j["data"]["hookOutcomes"], serde_json::json!([]));
    assert_eq!(j["data"]["worktrees"].as_array().unwrap().len(), 1);
    assert_eq!(git(&ws.repo("web"), &["rev-parse", "topic"]), first);
    assert!(!ws.root.join("worktrees/api").exists());
    // A --base that names no commit is refused before anything, naming the repository.
    let before = ws.snapshot();
    let out = ws.run(&[
        "worktree",
        "create",
        "t2",
        "--base",
        "no-such-ref",
        "--json",
    ]);
    out.expect(9);
    let j = out.json();
    assert_eq!(j["error"]["code"], "bad_base");
    assert!(
        j["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("repository web: no-such-ref names no commit"),
        "{j}"
    );
    assert_eq!(ws.snapshot(), before);
    assert!(ws.order().is_empty());
    // An unknown repository is a usage error.
    ws.run(&["worktree", "create", "t2", "--repo", "nope"])
        .expect(2);
    ws.run(&["worktree", "create", "bad..name"]).expect(2);
}

#[test]
fn standalone_create_and_remove_use_the_user_global_hooks_of_the_main_root() {
    let ws = lifecycle_common::Ws::bare();
    let main = ws.root.join("app");
    lifecycle_common::make_repo(&main, 2);
    let recorder = lifecycle_common::fixtures().join("record.sh");
    let mut ws = ws;
    ws.env
        .push(("RECORDER".into(), recorder.display().to_string()));
    for name in FORGEABLE {
        ws.env.push((name.into(), "forged".into()));
    }
    for lc in ["pre-create", "post-create", "pre-remove", "post-remove"] {
        ws.recorder(&format!("~/.arashi/hooks/app/{lc}.sh"));
        ws.recorder(&format!("~/.arashi/hooks/{lc}.sh"));
    }
    // Repository-local hooks are inactive without a config.
    ws.native(
        "app/.arashi/hooks/pre-create.sh",
        "echo DECOY >> \"$ORDER_LOG\"\n",
    );
    ws.run_in(&main, &["worktree", "create", "one"]).expect(0);
    let wt1 = ws.root.join("app.worktrees/one");
    assert!(wt1.join(".git").exists());
    // From inside the linked worktree, the main root's name still picks the hooks.
    ws.run_in(&wt1, &["worktree", "create", "two"]).expect(0);
    let main_s = main.display().to_string();
    let order = ws.order();
    assert_eq!(
        order[..4],
        [
            format!("pre-create|global-repository|app|{main_s}"),
            format!("pre-create|global-shared|app|{main_s}"),
            format!("post-create|global-repository|app|{main_s}"),
            format!("post-create|global-shared|app|{main_s}"),
        ]
    );
    // Remove, started elsewhere with -C.
    let elsewhere = ws.tmp.path().to_path_buf();
    ws.run_in(&elsewhere, &["-C", &main_s, "worktree", "remove", "two"])
        .expect(0);
    assert!(!ws.root.join("app.worktrees/two").exists());
    let order = ws.order();
    assert_eq!(order.len(), 12);
    assert!(order[8].starts_with("pre-remove|global-repository|app|"));
    assert!(order[11].starts_with("post-remove|global-shared|app|"));
    // Every run's environment, exactly.
    let home = ws.home.display().to_string();
    let runs = [("one", "create"), ("two", "create"), ("two", "remove")];
    let mut n = 0;
    for (branch, op) in runs {
        let worktree = ws
            .root
            .join("app.worktrees")
            .join(branch)
            .display()
            .to_string();
        for lc in [format!("pre-{op}"), format!("post-{op}")] {
            for (scope, source) in [
                (
                    "global-repository",
                    format!("{home}/.arashi/hooks/app/{lc}.sh"),
                ),
                ("global-shared", format!("{home}/.arashi/hooks/{lc}.sh")),
            ] {
                n += 1;
                let mut expected: std::collections::BTreeMap<String, String> = [
                    ("ARASHI_BRANCH_NAME", branch.to_string()),
                    ("ARASHI_HOOK_EXECUTION_PATH", main_s.clone()),
                    ("ARASHI_HOOK_INPUT", "unavailable".into()),
                    ("ARASHI_HOOK_NAME", lc.clone()),
                    ("ARASHI_HOOK_SCOPE", scope.into()),
                    ("ARASHI_HOOK_SOURCE_PATH", source),
                    ("ARASHI_HOOK_TARGET_REPOSITORY", "app".into()),
                    ("ARASHI_HOOK_TARGET_REPO_PATH", main_s.clone()),
                    ("ARASHI_HOOK_TARGET_WORKTREE_PATH", worktree.clone()),
                    ("ARASHI_HOOK_WORKSPACE_MODE", "standalone".into()),
                    ("ARASHI_MAIN_REPO_PATH", main_s.clone()),
                    // arashi's aliases: the main root's name and path, the one worktree.
                    ("ARASHI_REPO_NAME", "app".into()),
                    ("ARASHI_REPO_PATH", main_s.clone()),
                    ("ARASHI_WORKTREE_PATH", worktree.clone()),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
                if op == "remove" {
                    expected.insert(
                        "ARASHI_REMOVE_TARGETS_JSON".into(),
                        format!(
                            r#"[{{"repository":"app","branchName":"two","worktreePath":"{worktree}"}}]"#
                        ),
                    );
                    for (k, v) in [
                        ("ARASHI_OPERATION", "remove"),
                        ("ARASHI_REMOVE_TARGET_REPOSITORIES", "app"),
                        ("ARASHI_REMOVE_TARGET_BRANCHES", "two"),
                        ("ARASHI_REMOVE_TARGET_WORKTREES", &worktree),
                        ("ARASHI_REMOVE_TOTAL_REPOSITORIES", "1"),
                        ("ARASHI_REMOVE_TOTAL_BRANCHES", "1"),
                        ("ARASHI_REMOVE_TOTAL_WORKTREES", "1"),
                    ] {
                        expected.insert(k.into(), v.into());
                    }
                }
                assert_eq!(ws.env_of(n), expected, "run {n}: {lc} {scope}");
            }
        }
    }
    // --repo needs a config.
    ws.run_in(&main, &["worktree", "create", "three", "--repo", "app"])
        .expect(2);
    // Outside any repository and without a config: not found; so is a -C DIR that does
    // not exist, for every worktree command, as for the rest of hookq.
    ws.run_in(&elsewhere, &["worktree", "hooks"]).expect(4);
    let missing = ws.tmp.path().join("missing");
    let missing = missing.display().to_string();
    for cmd in [
        &["worktree", "hooks"][..],
        &["worktree", "init"],
        &["worktree", "create", "x"],
        &["worktree", "remove", "x"],
    ] {
        let out = ws.run_in(&elsewhere, &[&["-C", &missing][..], cmd].concat());
        out.expect(4);
        assert!(
            out.stderr.starts_with(&format!(
                "error: cannot use {missing} as the directory to start from: "
            )),
            "{}",
            out.stderr
        );
    }
    assert!(!ws.tmp.path().join("missing").exists());
}

#[test]
fn a_second_command_is_refused_while_one_works_when_it_may_not_wait() {
    // The first create holds the lock until the test lets its last hook end.
    // Bounded (a minute), so that a failing test leaves no shell waiting behind it.
    let mut ws = recording_ws(
        "n=0; until [ -e \"$RELEASE\" ] || [ $n -ge 3000 ]; do sleep 0.02; n=$((n + 1)); done",
    );
    let release = ws.tmp.path().join("release");
    ws.env
        .push(("RELEASE".into(), release.display().to_string()));
    ws.env
        .push(("HOOKQ_WORKTREE_LOCK_WAIT_MS".into(), "0".into()));
    let mut first = ws
        .command(&ws.root, &["worktree", "create", "slow"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the first holds the lock (its first worktree exists).
    crate::support::eventually("the first create to start", || {
        ws.root.join("worktrees/api/slow").exists()
    });
    let out = ws.run(&["worktree", "create", "other", "--json"]);
    out.expect(6);
    assert_eq!(out.json()["error"]["code"], "busy");
    // The inspector does not wait for it, and leaves its journal alone.
    ws.run(&["worktree", "hooks"]).expect(0);
    std::fs::write(&release, "").unwrap();
    assert!(first.wait().unwrap().success());
    assert!(ws.root.join("worktrees/web/slow").exists());
}

#[test]
fn creates_started_together_wait_for_each_other_and_all_succeed() {
    // Parallel agents each making their own worktree: the workspace post-create is slow
    // enough that the four overlap.
    let ws = recording_ws("sleep 1");
    let branches = ["a1", "a2", "a3", "a4"];
    let children: Vec<_> = branches
        .iter()
        .map(|b| {
            ws.command(&ws.root, &["worktree", "create", b])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut waited = 0;
    for (b, child) in branches.iter().zip(children) {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "create {b}: {stderr}");
        for repo in ["web", "api"] {
            assert!(
                ws.root.join("worktrees").join(repo).join(b).is_dir(),
                "{b} {repo}"
            );
        }
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("waiting for"))
            .collect();
        assert!(lines.len() <= 1, "{stderr}");
        if let Some(line) = lines.first() {
            assert!(
                line.contains("create of branch") && line.contains("hookq-worktree/lock"),
                "{line}"
            );
            waited += 1;
        }
    }
    assert!(waited >= 1, "none of the four waited: they did not overlap");
}

#[test]
fn a_failure_at_any_create_hook_after_the_first_change_leaves_nothing_it_made() {
    // Each location after the first `git worktree add` fails in turn; the one before it (the
    // workspace pre-create) has its own test.
    for (i, failing) in [
        "pre-create.web",
        "post-create.web",
        "pre-create.api",
        "post-create.api",
        "post-create",
    ]
    .into_iter()
    .enumerate()
    {
        // Written by hand: the repositories run in file order, web first.
        let config = r#"{"repos": {"web": {"path": "repos/web"}, "api": {"path": "repos/api"}}}"#;
        let mut ws = Ws::configured(&["web", "api"], Some(config));
        let recorder = lifecycle_common::fixtures().join("record.sh");
        ws.env
            .push(("RECORDER".into(), recorder.display().to_string()));
        for h in [
            "pre-create",
            "pre-create.web",
            "post-create.web",
            "pre-create.api",
            "post-create.api",
            "post-create",
        ] {
            let exit = if h == failing { 5 } else { 0 };
            ws.native(
                &format!(".arashi/hooks/{h}.sh"),
                &format!("bash \"$RECORDER\"\nexit {exit}\n"),
            );
        }
        // api has the branch already: it must keep it, and its commit.
        git(&ws.repo("api"), &["branch", "topic"]);
        let before = ws.snapshot();
        let out = ws.run(&["worktree", "create", "topic", "--json"]);
        out.expect(7);
        assert_eq!(ws.snapshot(), before, "{failing}");
        assert!(!ws.root.join("worktrees").exists(), "{failing}");
        assert!(
            git(&ws.repo("web"), &["branch", "--list", "topic"]).is_empty(),
            "{failing}: the branch this create made is gone"
        );
        assert!(
            !git(&ws.repo("api"), &["branch", "--list", "topic"]).is_empty(),
            "{failing}: the branch that existed stays"
        );
        // The hooks up to the failing one ran, the rest are recorded as skipped.
        assert_eq!(ws.order().len(), i + 2, "{failing}: {:#?}", ws.order());
        let j = out.json();
        let statuses = lifecycle_common::statuses(&j["error"]["details"]["hookOutcomes"]);
        let mut expected = vec!["succeeded"; i + 1];
        expected.push("exited-nonzero");
        expected.extend(vec!["skipped"; 6 - i - 2]);
        assert_eq!(statuses, expected, "{failing}");
        assert_eq!(
            j["error"]["details"]["rollbackWarnings"],
            serde_json::json!([]),
            "{failing}"
        );
    }
}

#[test]
fn names_git_refuses_are_usage_errors_before_anything() {
    let ws = recording_ws(RECORD);
    let before = ws.snapshot();
    for bad in [
        "HEAD", "../x", "-x", "", "a b", "x.lock", "a//b", "a..b", "@", "x~1", "ok/",
    ] {
        for cmd in ["create", "remove"] {
            let out = ws.run(&["worktree", cmd, "--json", "--", bad]);
            out.expect(2);
            let j = out.json();
            assert_eq!(j["error"]["code"], "usage", "{bad:?}");
            let msg = j["error"]["message"].as_str().unwrap();
            assert!(msg.starts_with("invalid branch name"), "{bad:?}: {msg}");
        }
    }
    assert_eq!(ws.snapshot(), before);
    assert!(ws.order().is_empty(), "no hook ran");
}

#[test]
fn repository_paths_are_checked_before_anything_and_named_by_key() {
    let ws = recording_ws(RECORD);
    std::fs::create_dir_all(ws.root.join("plain")).unwrap();
    let config_path = ws.root.join(".arashi/config.json");
    let before = ws.snapshot();
    for (web_path, what) in [
        ("repos/missing", "does not exist"),
        ("plain", "is not the top of a git work tree"),
        ("repos/web/.git", "is not the top of a git work tree"),
    ] {
        ws.write_config(
            &serde_json::json!({"repos": {
                "web": {"path": web_path}, "api": {"path": "repos/api"}}})
            .to_string(),
        );
        let out = ws.run(&["worktree", "create", "topic"]);
        out.expect(9);
        assert!(out.stderr.contains(what), "{web_path}: {}", out.stderr);
        assert!(
            out.stderr
                .contains(&format!("(repos.web.path in {})", config_path.display())),
            "{web_path}: {}",
            out.stderr
        );
    }
    // Two entries naming one checkout: a config error at the second one's key.
    ws.write_config(
        &serde_json::json!({"repos": {
            "web": {"path": "repos/web"}, "web2": {"path": "./repos/../repos/web"}}})
        .to_string(),
    );
    for cmd in [
        &["worktree", "create", "topic"][..],
        &["worktree", "remove", "topic"],
    ] {
        let out = ws.run(cmd);
        out.expect(3);
        assert!(
            out.stderr.contains(&format!(
                "invalid config {}: repos.web2.path:",
                config_path.display()
            )),
            "{}",
            out.stderr
        );
    }
    assert_eq!(ws.snapshot(), before);
    assert!(ws.order().is_empty(), "no hook ran");
}

/// A hook that hangs with a child of its own that ignores SIGTERM, after writing both pids to
/// `$READY` (all at once, once the child ignores it: the test signals hookq when the file
/// appears).
const HANGING: &str = "(trap '' TERM; echo \"$BASHPID\" > \"$READY.child\"; exec sleep 300) &
n=0; until [ -s \"$READY.child\" ] || [ $n -ge 6000 ]; do sleep 0.01; n=$((n + 1)); done
echo \"$$ $(cat \"$READY.child\")\" > \"$READY.tmp\"; mv \"$READY.tmp\" \"$READY\"; sleep 300
";

/// web and api with the native create hooks `hooks` (`(name, body)`), each bounded by 10
/// minutes (a stop ends them, not the timeout), and `$READY` set for them; returns the
/// workspace and the `$READY` path.
fn signal_ws(hooks: &[(&str, &str)]) -> (Ws, std::path::PathBuf) {
    let mut ws = Ws::configured(
        &["web", "api"],
        Some(
            r#"{"repos": {"web": {"path": "repos/web"}, "api": {"path": "repos/api"}},
                "hooks": {"timeout": 600000}}"#,
        ),
    );
    for (name, body) in hooks {
        ws.native(&format!(".arashi/hooks/{name}.sh"), body);
    }
    let ready = ws.tmp.path().join("ready");
    ws.env.push(("READY".into(), ready.display().to_string()));
    (ws, ready)
}

/// The `(hookName, status, signal)` of each ledger row.
fn rows(ledger: &serde_json::Value) -> Vec<(String, String, serde_json::Value)> {
    ledger
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["hookName"].as_str().unwrap().to_string(),
                o["status"].as_str().unwrap().to_string(),
                o["signal"].clone(),
            )
        })
        .collect()
}

/// One SIGTERM while a create hook hangs ends the hook's whole process group at once (SIGTERM,
/// then SIGKILL after the 5 s grace for the child that ignores it), long before the hook's own
/// timeout, and rolls the create back as a failing hook would, naming the stop.
#[test]
fn one_sigterm_ends_a_hanging_create_hook_and_rolls_the_create_back() {
    let (ws, ready) = signal_ws(&[
        ("pre-create.web", HANGING),
        ("post-create.web", "exit 0\n"),
        ("post-create", "exit 0\n"),
    ]);
    let before = ws.snapshot();
    let (out, took) = ws.run_signalled(
        &["worktree", "create", "feature/s", "--json"],
        &ready,
        libc::SIGTERM,
    );
    out.expect(7);
    let hook = pids_in(&ready);
    assert!(
        hook.iter().all(|&p| !alive(p)),
        "the hook's group outlived the stop: {hook:?}"
    );
    assert!(took < Duration::from_secs(60), "the stop took {took:?}");
    assert_eq!(ws.snapshot(), before, "the create was not rolled back");
    let j = out.json();
    assert_eq!(j["error"]["code"], "stopped");
    let msg = j["error"]["message"].as_str().unwrap();
    assert!(
        msg.starts_with(
            "create of branch feature/s failed: stopped by a signal while hook pre-create.web"
        ) && msg.ends_with("everything it made was rolled back"),
        "{msg}"
    );
    // SIGKILL ended what ignored SIGTERM; the hooks after it never ran.
    let sigkill = serde_json::json!(libc::SIGKILL);
    assert_eq!(
        rows(&j["error"]["details"]["hookOutcomes"]),
        [
            ("pre-create.web".into(), "exited-nonzero".into(), sigkill),
            (
                "post-create.web".into(),
                "skipped".into(),
                serde_json::Value::Null
            ),
            (
                "post-create".into(),
                "skipped".into(),
                serde_json::Value::Null
            ),
        ]
    );
}

/// One SIGINT during the last create hook is not lost once that hook is done: the hook is
/// ended (its SIGTERM is enough here) and the create rolled back, not reported as made.
#[test]
fn one_sigint_during_the_last_create_hook_rolls_the_create_back() {
    let (ws, ready) = signal_ws(&[(
        "post-create",
        "echo \"$$\" > \"$READY.tmp\"; mv \"$READY.tmp\" \"$READY\"; sleep 300\n",
    )]);
    let before = ws.snapshot();
    let (out, took) = ws.run_signalled(&["worktree", "create", "feature/s"], &ready, libc::SIGINT);
    out.expect(7);
    assert!(took < Duration::from_secs(60), "the stop took {took:?}");
    assert!(pids_in(&ready).iter().all(|&p| !alive(p)));
    assert_eq!(ws.snapshot(), before, "the create was not rolled back");
    assert!(
        out.stderr.contains(
            "error: create of branch feature/s failed: stopped by a signal while hook post-create (workspace) ran; everything it made was rolled back"
        ),
        "{}",
        out.stderr
    );
    assert!(
        out.stdout.contains("rolled back: removed worktree"),
        "{}",
        out.stdout
    );
}

#[test]
fn failure_messages_say_what_happened_in_words_once_each() {
    let ws = Ws::configured(&["web", "api"], None);
    // A failing workspace pre-create made nothing: nothing to roll back.
    ws.native(".arashi/hooks/pre-create.sh", "exit 3\n");
    let out = ws.run(&["worktree", "create", "x"]);
    out.expect(7);
    assert!(
        out.stderr.contains("; nothing was changed\n") && !out.stderr.contains("rolled back"),
        "{}",
        out.stderr
    );
    std::fs::remove_file(ws.root.join(".arashi/hooks/pre-create.sh")).unwrap();

    // Two problems: each listed once, under one error line; the hint does not send the user
    // to the hook listing for problems that are not about hooks.
    for repo in ["web", "api"] {
        std::fs::create_dir_all(ws.root.join("worktrees").join(repo).join("two")).unwrap();
    }
    let out = ws.run(&["worktree", "create", "two"]);
    out.expect(9);
    assert_eq!(out.stderr.matches("error:").count(), 1, "{}", out.stderr);
    assert_eq!(
        out.stderr.matches("exists already").count(),
        2,
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("more problem"), "{}", out.stderr);
    assert!(!out.stderr.contains("worktree hooks"), "{}", out.stderr);
    let out = ws.run(&["worktree", "create", "three", "--base", "no-such-ref"]);
    out.expect(9);
    assert!(out.stderr.contains("no-such-ref"), "{}", out.stderr);
    assert!(!out.stderr.contains("worktree hooks"), "{}", out.stderr);

    // --json: the failure is the JSON document on stdout, and not said again on stderr.
    let out = ws.run(&["worktree", "create", "two", "--json"]);
    out.expect(9);
    assert_eq!(out.json()["error"]["code"], "path_exists");
    assert!(!out.stderr.contains("error:"), "{}", out.stderr);
    assert!(!out.stderr.contains("hint:"), "{}", out.stderr);

    // A human error says it in words; the code stays in JSON.
    ws.write_config(
        r#"{"repos": {"web": {"path": "repos/web"}, "api": {"path": "repos/api"}},
            "hooks": {"interpreters": {"bash": "/nonexistent/bash"}, "scripts": {"pre-create": "true"}}}"#,
    );
    let out = ws.run(&["worktree", "create", "four"]);
    out.expect(9);
    assert!(
        !out.stderr.contains("interpreter_unavailable"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("/nonexistent/bash"), "{}", out.stderr);
    let j = ws.run(&["worktree", "create", "four", "--json"]).json();
    assert_eq!(j["error"]["code"], "interpreter_unavailable");

    // The inspector's hints do not tell the user to run the inspector.
    let out = ws.run(&["worktree", "hooks"]);
    out.expect(9);
    assert!(
        !out.stderr.contains("`hookq worktree hooks`"),
        "{}",
        out.stderr
    );
    ws.write_config(r#"{"repos": {"web": {"path": "repos/web"}}, "hooks": {"timeout": 0}}"#);
    let out = ws.run(&["worktree", "hooks"]);
    out.expect(3);
    assert!(
        !out.stderr.contains("`hookq worktree hooks`"),
        "{}",
        out.stderr
    );

    // Nor does the queue's config checker tell the user to run it.
    let repo = ws.repo("web");
    ws.run_in(&repo, &["init"]).expect(0);
    std::fs::write(repo.join(".radian/arc/config.toml"), "[hooks\n").unwrap();
    let out = ws.run_in(&repo, &["check"]);
    out.expect(3);
    assert!(!out.stderr.contains("`hookq check`"), "{}", out.stderr);
}
