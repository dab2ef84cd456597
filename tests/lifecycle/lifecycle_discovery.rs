//! Discovery and configuration: inline versus native alternatives, ambiguity, the Bash that
//! runs hooks, `hooks.timeout` validation, the inspector. Every refusal comes before any hook
//! or change.

use crate::support::lifecycle as lifecycle_common;

use std::os::unix::fs::PermissionsExt;

use lifecycle_common::{Ws, inline};

/// web and api with a recording workspace pre-create (which must never run when the plan is
/// refused) and the config's `hooks` object as given.
fn ws(hooks: &str, web_hooks: &str) -> Ws {
    let config = format!(
        r#"{{"repos": {{"web": {{"path": "repos/web", "hooks": {web_hooks}}}, "api": {{"path": "repos/api"}}}},
            "hooks": {hooks}}}"#
    );
    let mut ws = Ws::configured(&["web", "api"], Some(&config));
    ws.recorder(".arashi/hooks/pre-create.sh");
    let recorder = lifecycle_common::fixtures().join("record.sh");
    ws.env
        .push(("RECORDER".into(), recorder.display().to_string()));
    ws
}

fn q(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

#[test]
fn inline_and_native_at_one_location_is_an_ambiguity_and_nothing_runs() {
    let w = ws(
        "{}",
        &format!(r#"{{"post-create": {}}}"#, q(&inline("true"))),
    );
    w.native(".arashi/hooks/post-create.web.sh", "true\n");
    let before = w.snapshot();
    let out = w.run(&["worktree", "create", "x", "--json"]);
    out.expect(9);
    let j = out.json();
    assert_eq!(j["error"]["code"], "inline_file_ambiguity");
    let msg = j["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("repos.web.hooks.post-create") && msg.contains("post-create.web.sh"),
        "{msg}"
    );
    assert!(
        w.order().is_empty(),
        "the workspace pre-create did not run either"
    );
    assert_eq!(w.snapshot(), before);
    // Each alone is fine: the inline one.
    std::fs::remove_file(w.root.join(".arashi/hooks/post-create.web.sh")).unwrap();
    w.run(&["worktree", "create", "x"]).expect(0);
}

#[test]
fn an_interpreter_map_without_bash_fails_preflight() {
    let w = ws(
        "{}",
        &format!(
            r#"{{"pre-create": {{"powershell": {}, "cmd": {}}}}}"#,
            q(&inline("Write-Output hi")),
            q(&inline("echo hi"))
        ),
    );
    let before = w.snapshot();
    let out = w.run(&["worktree", "create", "x", "--json"]);
    out.expect(9);
    assert_eq!(out.json()["error"]["code"], "interpreter_unavailable");
    assert!(w.order().is_empty());
    assert_eq!(w.snapshot(), before);
    // A map with a bash variant runs that variant.
    let w = ws(
        "{}",
        &format!(
            r#"{{"pre-create": {{"bash": {}, "powershell": {}}}}}"#,
            q(&inline("bash \"$RECORDER\"")),
            q(&inline("exit 1"))
        ),
    );
    w.run(&["worktree", "create", "x"]).expect(0);
    assert_eq!(w.order().len(), 2);
}

#[test]
fn no_bash_on_path_is_interpreter_unavailable_and_empty_entries_are_not_the_cwd() {
    let mut w = ws("{}", "{}");
    // A PATH with git but no bash; the start directory holds an executable `bash` that an
    // empty PATH entry must not find.
    let bin = w.tmp.path().join("gitonly");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink("/usr/bin/git", bin.join("git")).unwrap();
    let trap = w.root.join("bash");
    std::fs::write(&trap, "#!/bin/sh\necho TRAP >> \"$ORDER_LOG\"\n").unwrap();
    std::fs::set_permissions(&trap, std::fs::Permissions::from_mode(0o755)).unwrap();
    w.env.push(("PATH".into(), format!("::{}:", bin.display())));
    let before = w.snapshot();
    let out = w.run(&["worktree", "create", "x", "--json"]);
    out.expect(9);
    assert_eq!(out.json()["error"]["code"], "interpreter_unavailable");
    assert!(w.order().is_empty());
    assert_eq!(w.snapshot(), before);
    // Without hooks, no Bash is needed.
    std::fs::remove_file(w.root.join(".arashi/hooks/pre-create.sh")).unwrap();
    w.run(&["worktree", "create", "x"]).expect(0);
}

#[test]
fn the_configured_bash_wins_over_path() {
    let t = tempfile::tempdir().unwrap();
    let fake = t.path().join("mybash");
    let used = t.path().join("used");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\necho used > {}\nexec /bin/bash \"$@\"\n",
            used.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let w = ws(
        &format!(
            r#"{{"interpreters": {{"bash": {}}}}}"#,
            q(&fake.display().to_string())
        ),
        "{}",
    );
    w.run(&["worktree", "create", "x"]).expect(0);
    assert!(used.exists(), "the configured bash ran the hook");
    assert_eq!(w.order().len(), 1);
    // A configured bash that is missing is an error, not a fallback to PATH.
    let w = ws(r#"{"interpreters": {"bash": "/nonexistent/bash"}}"#, "{}");
    let out = w.run(&["worktree", "create", "x", "--json"]);
    out.expect(9);
    assert!(out.stdout.contains("/nonexistent/bash"));
    assert!(w.order().is_empty());
}

#[test]
fn every_invalid_timeout_is_a_config_error_before_anything() {
    for bad in [
        "0".to_string(),
        "-1".into(),
        "1.5".into(),
        "\"300\"".into(),
        "2147483648".into(),
        "123456789012345678901234567890".into(),
        format!("1{}", "0".repeat(400)),
    ] {
        let w = ws(&format!(r#"{{"timeout": {bad}}}"#), "{}");
        let before = w.snapshot();
        for args in [
            &["worktree", "create", "x"][..],
            &["worktree", "remove", "x"],
            &["worktree", "hooks"],
        ] {
            let out = w.run(args);
            out.expect(3);
            let config = w.root.join(".arashi/config.json").display().to_string();
            assert!(out.stderr.contains(&config), "{bad}: {}", out.stderr);
            // Even a number too long for a double is named by its key.
            assert!(
                out.stderr.contains(&format!("{config}: hooks.timeout: ")),
                "{bad}: {}",
                out.stderr
            );
        }
        let out = w.run(&["worktree", "create", "x", "--json"]);
        assert_eq!(out.json()["error"]["code"], "config_invalid");
        assert!(w.order().is_empty(), "{bad}");
        assert_eq!(w.snapshot(), before, "{bad}");
    }
    ws(r#"{"timeout": 2147483647}"#, "{}")
        .run(&["worktree", "create", "x"])
        .expect(0);
}

#[test]
fn the_inspector_shows_each_hook_by_scope_and_source_without_running_it() {
    let w = ws(
        &format!(
            r#"{{"scripts": {{"post-remove": {}}}}}"#,
            q(&inline("exit 1"))
        ),
        &format!(r#"{{"post-create": {}}}"#, q(&inline("exit 1"))),
    );
    w.native("~/.arashi/hooks/pre-remove.sh", "exit 1\n");
    let out = w.run(&["worktree", "hooks"]);
    out.expect(0);
    assert!(
        out.stdout
            .contains("inline repos.web.hooks.post-create (owned by repository web)"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains(&format!("{}/.arashi/hooks/pre-create.sh", w.root.display()))
    );
    assert!(w.order().is_empty());
    let j = w.run(&["worktree", "hooks", "--json"]).json();
    let hooks = j["data"]["hooks"].as_array().unwrap();
    // pre-create (workspace), post-create.web, then pre-remove global-shared and
    // post-remove workspace for each of web and api.
    assert_eq!(hooks.len(), 6, "{hooks:#?}");
    assert_eq!(j["data"]["timeoutMs"], 300000);
    // A problem is shown and fails the inspector.
    w.native(".arashi/hooks/post-remove.sh", "true\n");
    let out = w.run(&["worktree", "hooks"]);
    out.expect(9);
    assert!(
        out.stderr.contains("inline/file ambiguity"),
        "{}",
        out.stderr
    );
}

#[test]
fn the_inspector_refuses_what_create_refuses_and_lists_an_ambiguous_location() {
    // A repository path naming no folder: create refuses it (exit 9), so must the inspector.
    let w = Ws::configured(
        &["web"],
        Some(r#"{"repos": {"web": {"path": "repos/web"}, "api": {"path": "repos/api"}}}"#),
    );
    w.run(&["worktree", "create", "x"]).expect(9);
    let out = w.run(&["worktree", "hooks"]);
    out.expect(9);
    assert!(
        out.stderr.contains("repository api") && out.stderr.contains("does not exist"),
        "{}",
        out.stderr
    );
    let j = w.run(&["worktree", "hooks", "--json"]).json();
    assert_eq!(j["error"]["code"], "not_a_repository");
    // A config listing no repository: create refuses it as bad usage, and so does the
    // inspector.
    w.write_config(r#"{"repos": {}}"#);
    w.run(&["worktree", "create", "x"]).expect(2);
    let out = w.run(&["worktree", "hooks"]);
    out.expect(2);
    assert!(
        out.stderr.contains("no repositories are configured"),
        "{}",
        out.stderr
    );

    // An inline pre-create and .arashi/hooks/pre-create.sh: both are listed, marked.
    let w = Ws::configured(
        &["web"],
        Some(&format!(
            r#"{{"repos": {{"web": {{"path": "repos/web"}}}}, "hooks": {{"scripts": {{"pre-create": {}}}}}}}"#,
            q(&inline("true"))
        )),
    );
    w.native(".arashi/hooks/pre-create.sh", "true\n");
    w.run(&["worktree", "create", "x"]).expect(9);
    let out = w.run(&["worktree", "hooks"]);
    out.expect(9);
    let rows: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("pre-create"))
        .collect();
    assert_eq!(rows.len(), 2, "{}", out.stdout);
    assert!(
        rows.iter().all(|r| r.contains("ambiguous")),
        "{}",
        out.stdout
    );
    let j = w.run(&["worktree", "hooks", "--json"]).json();
    assert_eq!(j["error"]["code"], "inline_file_ambiguity");
    let hooks = j["error"]["details"]["hooks"].as_array().unwrap();
    let marked: Vec<_> = hooks.iter().filter(|h| h["ambiguous"] == true).collect();
    assert_eq!(marked.len(), 2, "{hooks:#?}");
    assert!(marked.iter().all(|h| h["lifecycle"] == "pre-create"));
}

#[test]
fn a_misspelt_key_outside_the_hook_tables_is_warned_about_at_its_path() {
    let w = Ws::configured(
        &["web", "api"],
        Some(&format!(
            r#"{{"repos": {{"web": {{"path": "repos/web"}},
                 "api": {{"path": "repos/api", "hook": {{"post-create": {}}}}}}},
                "hook": {{"scripts": {{"pre-create": "exit 1"}}}},
                "editor": "vim"}}"#,
            q(&inline("true"))
        )),
    );
    let config = w.root.join(".arashi/config.json");
    for args in [
        &["worktree", "hooks"][..],
        &["worktree", "create", "x", "--dry-run"],
        &["worktree", "init"],
    ] {
        let out = w.run(args);
        out.expect(0);
        for (key, mean) in [
            ("hook", " (did you mean hooks?)"),
            ("repos.api.hook", " (did you mean repos.api.hooks?)"),
            ("editor", ""),
        ] {
            let line = format!(
                "warning: {}: {key}: unknown key, ignored{mean}\n",
                config.display()
            );
            assert!(
                out.stderr.contains(&line),
                "{args:?}: no {line:?} in:\n{}",
                out.stderr
            );
        }
    }
    // The ignored hooks stay ignored: the create runs neither.
    w.run(&["worktree", "create", "x"]).expect(0);
}

#[test]
fn unknown_keys_in_the_hook_tables_are_config_errors() {
    let w = ws(
        &format!(r#"{{"scripts": {{"precreate": {}}}}}"#, q(&inline("true"))),
        "{}",
    );
    let out = w.run(&["worktree", "create", "x"]);
    out.expect(3);
    assert!(
        out.stderr.contains("hooks.scripts.precreate"),
        "{}",
        out.stderr
    );
    let w = ws(
        "{}",
        &format!(r#"{{"pre-create": {{"zsh": {}}}}}"#, q(&inline("true"))),
    );
    let out = w.run(&["worktree", "create", "x"]);
    out.expect(3);
    assert!(
        out.stderr.contains("repos.web.hooks.pre-create.zsh"),
        "{}",
        out.stderr
    );
}

#[test]
fn init_inside_a_standalone_repository_writes_nothing() {
    // A config listing no repository would turn its standalone mode off.
    let w = Ws::bare();
    let app = w.root.join("app");
    lifecycle_common::make_repo(&app, 1);
    w.native("~/.arashi/hooks/app/pre-create.sh", "true\n");
    let out = w.run_in(&app, &["worktree", "init", "--json"]);
    out.expect(2);
    assert_eq!(out.json()["error"]["code"], "usage");
    let out = w.run_in(&app, &["worktree", "init"]);
    out.expect(2);
    assert!(
        out.stderr.contains("standalone mode") && out.stderr.contains("nothing was written"),
        "{}",
        out.stderr
    );
    assert!(!app.join(".arashi").exists());
    let j = w.run_in(&app, &["worktree", "hooks", "--json"]).json();
    assert_eq!(j["data"]["workspace"]["mode"], "standalone");
    assert_eq!(j["data"]["hooks"].as_array().unwrap().len(), 1);
}

#[test]
fn init_in_a_folder_without_repositories_says_so_and_writes_nothing() {
    let w = Ws::bare();
    std::fs::create_dir_all(w.root.join("repos/notes")).unwrap();
    let out = w.run(&["worktree", "init"]);
    out.expect(2);
    assert!(
        out.stderr.contains("no git repository")
            && out.stderr.contains(&format!("{}/repos", w.root.display()))
            && out.stderr.contains("nothing was written"),
        "{}",
        out.stderr
    );
    assert!(!w.root.join(".arashi").exists());
    let out = w.run(&["worktree", "init", "--json"]);
    out.expect(2);
    assert_eq!(out.json()["error"]["code"], "usage");
    // Once a repository is there, init lists it.
    lifecycle_common::make_repo(&w.root.join("repos/web"), 1);
    w.run(&["worktree", "init"]).expect(0);
    w.run(&["worktree", "create", "x"]).expect(0);
}

#[test]
fn init_writes_a_skeleton_and_inert_examples_and_never_overwrites() {
    let w = Ws::bare();
    lifecycle_common::make_repo(&w.root.join("repos/web"), 1);
    lifecycle_common::make_repo(&w.root.join("api"), 1);
    let out = w.run(&["worktree", "init", "--json"]);
    out.expect(0);
    let files = out.json()["data"]["files"].as_array().unwrap().clone();
    assert!(files.iter().all(|f| f["written"] == true));
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(w.root.join(".arashi/config.json")).unwrap())
            .unwrap();
    assert_eq!(config["repos"]["web"]["path"], "repos/web");
    assert_eq!(config["repos"]["api"]["path"], "api");
    assert_eq!(config["hooks"]["timeout"], 300000);
    for f in [
        "pre-create.sh.example",
        "post-remove.sh.example",
        "post-create.web.sh.example",
        "pre-create.api.sh.example",
    ] {
        assert!(w.root.join(".arashi/hooks").join(f).is_file(), "{f}");
    }
    // Examples are inert: nothing is discovered.
    let j = w.run(&["worktree", "hooks", "--json"]).json();
    assert_eq!(j["data"]["hooks"], serde_json::json!([]));
    // A second init keeps everything, including an edited config.
    std::fs::write(
        w.root.join(".arashi/config.json"),
        r#"{"repos": {"web": {"path": "repos/web"}}}"#,
    )
    .unwrap();
    let out = w.run(&["worktree", "init", "--json"]);
    out.expect(0);
    let files = out.json()["data"]["files"].as_array().unwrap().clone();
    assert!(files.iter().all(|f| f["written"] == false), "{files:?}");
    // In a configured workspace, the examples follow the config's repositories.
    assert!(
        !files
            .iter()
            .any(|f| f["path"].as_str().unwrap().contains(".api.")),
        "{files:?}"
    );
    assert!(
        files
            .iter()
            .any(|f| f["path"].as_str().unwrap().contains(".web.")),
        "{files:?}"
    );
    assert_eq!(
        std::fs::read_to_string(w.root.join(".arashi/config.json")).unwrap(),
        r#"{"repos": {"web": {"path": "repos/web"}}}"#
    );
    // An activated example runs.
    std::fs::copy(
        w.root.join(".arashi/hooks/post-create.web.sh.example"),
        w.root.join(".arashi/hooks/post-create.web.sh"),
    )
    .unwrap();
    let out = w.run(&["worktree", "create", "x", "--json"]);
    out.expect(0);
    assert_eq!(out.json()["data"]["hookOutcomes"][0]["status"], "succeeded");
}

#[test]
fn an_inline_hook_bash_cannot_parse_is_refused_before_anything_and_never_shown() {
    // Bash's own syntax error quotes the offending line, marker and all: the plan checks
    // every inline hook first, and runs none of it.
    let w = ws(
        "{}",
        &format!(
            r#"{{"post-create": {}, "pre-remove": {}}}"#,
            q(&inline("echo ok )")),
            q(&inline("if true; then echo"))
        ),
    );
    let before = w.snapshot();
    let out = w.run(&["worktree", "create", "x", "--json"]);
    out.expect(9);
    let j = out.json();
    assert_eq!(j["error"]["code"], "hook_invalid");
    assert_eq!(
        j["error"]["message"],
        "inline repos.web.hooks.post-create (owned by repository web): Bash cannot parse it (a syntax error on line 1)"
    );
    assert!(w.order().is_empty(), "the workspace pre-create did not run");
    assert_eq!(w.snapshot(), before);
    let out = w.run(&["worktree", "hooks"]);
    out.expect(9);
    assert!(
        out.stderr.contains("repos.web.hooks.pre-remove"),
        "{}",
        out.stderr
    );
    // Remove checks its own hooks the same way, before anything is removed.
    let fixed = w.root.join(".arashi/config.json");
    let text = std::fs::read_to_string(&fixed).unwrap();
    let config: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut config = config;
    config["repos"]["web"]["hooks"]
        .as_object_mut()
        .unwrap()
        .remove("post-create");
    w.write_config(&config.to_string());
    w.run(&["worktree", "create", "x"]).expect(0);
    let before = w.snapshot();
    let out = w.run(&["worktree", "remove", "x"]);
    out.expect(9);
    assert!(
        out.stderr.contains(
            "inline repos.web.hooks.pre-remove (owned by repository web): Bash cannot parse it"
        ),
        "{}",
        out.stderr
    );
    assert_eq!(w.snapshot(), before);
}
