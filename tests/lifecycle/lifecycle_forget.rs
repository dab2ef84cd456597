//! `hookq worktree forget REPO`: only the repository's canonical create hook files and their
//! templates in the workspace's hooks folder go, and only when plainly its own; everything
//! else stays, and what stays of the repository is listed. Never a file's content or an
//! inline hook's text.

use crate::support::lifecycle as lifecycle_common;

use std::path::{Path, PathBuf};

use lifecycle_common::{Ws, inline, tree};
use serde_json::Value;

/// Written into every hook file here: a listing must never show a file's content.
const CONTENT: &str = "echo file-content-7c1e";

/// The items of a forget's JSON result as `(hookName, kind, path or configKey, status)`.
fn items(j: &Value) -> Vec<(String, String, String, String)> {
    let list = if j["ok"] == true {
        &j["data"]["items"]
    } else {
        &j["error"]["details"]["items"]
    };
    list.as_array()
        .unwrap_or_else(|| panic!("no items in {j:#}"))
        .iter()
        .map(|i| {
            let s = |k: &str| i[k].as_str().unwrap_or_default().to_owned();
            let at = if i["path"].is_null() {
                s("configKey")
            } else {
                s("path")
            };
            (s("hookName"), s("kind"), at, s("status"))
        })
        .collect()
}

fn item(name: &str, kind: &str, at: &Path, status: &str) -> (String, String, String, String) {
    (
        name.into(),
        kind.into(),
        at.display().to_string(),
        status.into(),
    )
}

/// Every file under the workspace's and the user's hook folders and web's own,
/// with its content: what a forget may change.
fn hook_files(ws: &Ws) -> String {
    let mut s = String::new();
    for dir in [
        ws.root.join(".arashi/hooks"),
        ws.home.join(".arashi"),
        ws.repo("web").join(".arashi"),
    ] {
        s += &tree(&dir);
        for line in tree(&dir).lines() {
            let p = Path::new(line);
            if p.is_file() {
                s += &format!("{line}: {}\n", std::fs::read_to_string(p).unwrap());
            }
        }
    }
    s
}

/// web (with an inline post-create) and api, and a hook file at every place a forget of web
/// must tell apart.
fn forget_ws() -> (Ws, PathBuf) {
    let config = serde_json::json!({
        "repos": {
            "web": {"path": "repos/web", "hooks": {"post-create": inline("true"), "pre-remove": inline("true")}},
            "api": {"path": "repos/api"}
        }
    });
    let ws = Ws::configured(&["web", "api"], Some(&config.to_string()));
    let body = format!("{CONTENT}\n");
    for rel in [
        // web's own: these go.
        ".arashi/hooks/pre-create.web.sh",
        ".arashi/hooks/pre-create.web.sh.example",
        ".arashi/hooks/post-create.web.sh.example",
        // Workspace-wide, shared, other repositories', Windows': these stay, unlisted.
        ".arashi/hooks/pre-create.sh",
        ".arashi/hooks/post-create.sh.example",
        ".arashi/hooks/pre-remove.sh",
        ".arashi/hooks/pre-create.api.sh",
        ".arashi/hooks/post-create.api.sh.example",
        ".arashi/hooks/pre-create.web.ps1",
        "~/.arashi/hooks/pre-create.sh",
        "~/.arashi/hooks/api/pre-remove.sh",
        // web's, but not the workspace's to remove: listed as kept.
        ".arashi/hooks/pre-create.WEB.sh",
        "~/.arashi/hooks/web/pre-remove.sh",
        "repos/web/.arashi/hooks/post-remove.sh",
    ] {
        ws.native(rel, &body);
    }
    // A link in web's place: kept, and what it points to untouched.
    let outside = ws.tmp.path().join("shared-post-create.sh");
    std::fs::write(&outside, &body).unwrap();
    let link = ws.root.join(".arashi/hooks/post-create.web.sh");
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    (ws, outside)
}

#[test]
fn forget_removes_only_the_repositorys_own_create_files_and_lists_what_stays() {
    let (ws, outside) = forget_ws();
    let config_before = std::fs::read(ws.root.join(".arashi/config.json")).unwrap();
    let hooks = ws.root.join(".arashi/hooks");
    let h = |f: &str| hooks.join(f);
    let home = ws.home.join(".arashi/hooks");
    let kept_rest = |status: &str| {
        vec![
            item(
                "pre-create.web",
                "workspace-file",
                &h("pre-create.WEB.sh"),
                "kept",
            ),
            item(
                "pre-create.web",
                "workspace-file",
                &h("pre-create.web.sh"),
                status,
            ),
            item(
                "pre-create.web",
                "workspace-example",
                &h("pre-create.web.sh.example"),
                status,
            ),
            item(
                "post-create.web",
                "workspace-file",
                &h("post-create.web.sh"),
                "kept",
            ),
            item(
                "post-create.web",
                "workspace-example",
                &h("post-create.web.sh.example"),
                status,
            ),
            item(
                "post-create",
                "inline-config",
                Path::new("repos.web.hooks.post-create"),
                "kept",
            ),
            item(
                "pre-remove",
                "inline-config",
                Path::new("repos.web.hooks.pre-remove"),
                "kept",
            ),
            item(
                "post-remove",
                "repository-file",
                &ws.repo("web").join(".arashi/hooks/post-remove.sh"),
                "kept",
            ),
            item(
                "pre-remove",
                "user-global-file",
                &home.join("web/pre-remove.sh"),
                "kept",
            ),
        ]
    };

    // A dry run lists the same and changes nothing.
    let before = hook_files(&ws);
    let out = ws.run(&["worktree", "forget", "web", "--dry-run", "--json"]);
    out.expect(0);
    let j = out.json();
    assert_eq!(j["command"], "worktree forget");
    assert_eq!(j["data"]["dryRun"], true);
    assert_eq!(items(&j), kept_rest("would-remove"));
    assert_eq!(hook_files(&ws), before);

    let out = ws.run(&["worktree", "forget", "web", "--json"]);
    out.expect(0);
    let j = out.json();
    assert_eq!(items(&j), kept_rest("removed"));
    assert_eq!(j["data"]["repository"], "web");
    assert_eq!(j["data"]["stillConfigured"], true);
    // Each kept item says why; a removed one needs no reason.
    for i in j["data"]["items"].as_array().unwrap() {
        assert_eq!(i["reason"].is_null(), i["status"] == "removed", "{i}");
    }
    assert!(!out.stdout.contains("file-content"), "{}", out.stdout);
    for f in [
        "pre-create.web.sh",
        "pre-create.web.sh.example",
        "post-create.web.sh.example",
    ] {
        assert!(!h(f).exists(), "{f} stays");
    }
    for f in [
        "pre-create.sh",
        "post-create.sh.example",
        "pre-remove.sh",
        "pre-create.api.sh",
        "post-create.api.sh.example",
        "pre-create.web.ps1",
        "pre-create.WEB.sh",
    ] {
        assert!(h(f).is_file(), "{f} is gone");
    }
    assert!(h("post-create.web.sh").is_symlink());
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        format!("{CONTENT}\n")
    );
    for p in [
        home.join("pre-create.sh"),
        home.join("api/pre-remove.sh"),
        home.join("web/pre-remove.sh"),
        ws.repo("web").join(".arashi/hooks/post-remove.sh"),
    ] {
        assert!(p.is_file(), "{} is gone", p.display());
    }
    // hookq never edits the config.
    assert_eq!(
        std::fs::read(ws.root.join(".arashi/config.json")).unwrap(),
        config_before
    );

    // Twice is harmless: nothing more goes, the same things stay.
    let after = hook_files(&ws);
    let out = ws.run(&["worktree", "forget", "web", "--json"]);
    out.expect(0);
    let j = out.json();
    let kept: Vec<_> = kept_rest("removed")
        .into_iter()
        .filter(|i| i.3 == "kept")
        .collect();
    assert_eq!(items(&j), kept);
    assert_eq!(hook_files(&ws), after);

    // For people: a line per item with its status, name and place, the reason for what
    // stays, and the note about the config.
    let out = ws.run(&["worktree", "forget", "web"]);
    out.expect(0);
    assert!(!out.stdout.contains("file-content"), "{}", out.stdout);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines.iter().any(|l| l.contains("kept")
            && l.contains("post-create.web")
            && l.contains(&h("post-create.web.sh").display().to_string())
            && l.contains("symbolic link")),
        "{}",
        out.stdout
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("inline repos.web.hooks.post-create")
                && l.contains("remove it from the config by hand")),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("no hook file of web to remove"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("note: the config still lists repos.web; hookq never edits the config"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_file_another_user_owns_is_kept() {
    let ws = Ws::configured(&["web"], None);
    let file = ws.native(".arashi/hooks/post-create.web.sh", CONTENT);
    let example = ws.native(".arashi/hooks/post-create.web.sh.example", CONTENT);
    // Only root can give a file away; as anyone else the case cannot be set up here.
    if std::os::unix::fs::chown(&file, Some(4242), None).is_err() {
        crate::support::skipped(
            "a_file_another_user_owns_is_kept",
            "only root can give a file to another user (run the tests as root, as CI does)",
        );
        return;
    }
    let out = ws.run(&["worktree", "forget", "web", "--json"]);
    out.expect(0);
    let j = out.json();
    assert_eq!(
        items(&j),
        [
            item("post-create.web", "workspace-file", &file, "kept"),
            item("post-create.web", "workspace-example", &example, "removed"),
        ]
    );
    let reason = j["data"]["items"][0]["reason"].as_str().unwrap();
    assert!(reason.starts_with("owned by user 4242"), "{reason}");
    assert!(file.is_file());
    assert!(!example.exists());
}

#[test]
fn a_name_two_repositories_could_own_is_kept() {
    // web and Web are two repositories, one file on a case-insensitive file system.
    let config = r#"{"repos": {"web": {"path": "repos/web"}, "Web": {"path": "repos/Web2"}}}"#;
    let ws = Ws::configured(&["web", "Web2"], Some(config));
    let lower = ws.native(".arashi/hooks/pre-create.web.sh", CONTENT);
    let upper = ws.native(".arashi/hooks/post-create.Web.sh", CONTENT);
    for repo in ["web", "Web"] {
        let out = ws.run(&["worktree", "forget", repo, "--json"]);
        out.expect(0);
        let j = out.json();
        let got = items(&j);
        assert!(got.iter().all(|i| i.3 == "kept"), "{repo}: {got:?}");
        let reasons: Vec<&str> = j["data"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["reason"].as_str().unwrap())
            .collect();
        let other = if repo == "web" { "Web" } else { "web" };
        assert!(
            reasons.iter().any(|r| r.starts_with(&format!(
                "the name is also repository {other}'s, letter case aside"
            ))),
            "{repo}: {reasons:?}"
        );
    }
    assert!(lower.is_file() && upper.is_file());
}

#[test]
fn a_repository_no_longer_configured_can_be_forgotten() {
    let ws = Ws::configured(&["api"], None);
    let file = ws.native(".arashi/hooks/pre-create.old.sh", CONTENT);
    // A folder in its place is no file to remove.
    let folder = ws.root.join(".arashi/hooks/post-create.old.sh.example");
    std::fs::create_dir(&folder).unwrap();
    let out = ws.run(&["worktree", "forget", "old"]);
    out.expect(0);
    assert!(!file.exists());
    assert!(folder.is_dir());
    assert!(
        out.stdout.lines().any(|l| l.contains("kept")
            && l.contains(&folder.display().to_string())
            && l.contains("not a regular file")),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("removed"), "{}", out.stdout);
    assert!(!out.stdout.contains("note:"), "{}", out.stdout);
    let out = ws.run(&["worktree", "forget", "old", "--json"]);
    out.expect(0);
    let j = out.json();
    assert_eq!(
        items(&j),
        [item(
            "post-create.old",
            "workspace-example",
            &folder,
            "kept"
        )]
    );
    assert_eq!(j["data"]["stillConfigured"], false);
}

#[test]
fn forget_refuses_a_bad_name_and_standalone_mode_with_one_line() {
    let ws = Ws::configured(&["web"], None);
    let out = ws.run(&["worktree", "forget", "../web"]);
    out.expect(2);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr
            .starts_with("error: invalid repository name \"../web\""),
        "{}",
        out.stderr
    );
    let ws = Ws::bare();
    let main = ws.root.join("app");
    lifecycle_common::make_repo(&main, 1);
    ws.native("~/.arashi/hooks/app/pre-create.sh", CONTENT);
    let out = ws.run_in(&main, &["worktree", "forget", "app", "--json"]);
    out.expect(2);
    let j = out.json();
    assert_eq!(j["error"]["code"], "usage");
    assert!(
        j["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("forget needs a configured workspace"),
        "{j}"
    );
    assert!(ws.home.join(".arashi/hooks/app/pre-create.sh").is_file());
}
