//! The three `after_merge` lines `hookq init` writes, against real git repositories: a bare
//! remote, a workspace repository with a pushed task branch and the task's worktree.

use crate::support::queue as common;

use std::path::Path;

use common::Ws;

const GIT_ENV: [(&str, &str); 6] = [
    ("GIT_AUTHOR_NAME", "Hookq Test"),
    ("GIT_AUTHOR_EMAIL", "test@hookq.invalid"),
    ("GIT_COMMITTER_NAME", "Hookq Test"),
    ("GIT_COMMITTER_EMAIL", "test@hookq.invalid"),
    ("GIT_CONFIG_NOSYSTEM", "1"),
    ("GIT_TERMINAL_PROMPT", "0"),
];

fn git(ws: &Ws, dir: &Path, args: &[&str]) -> String {
    ws.sh_in(dir, "git", args)
}

/// Whether `git` exits 0.
fn git_ok(ws: &Ws, dir: &Path, args: &[&str]) -> bool {
    ws.command("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
        .status
        .success()
}

/// A workspace repository whose remote `remote` (a bare repository) has `main` and
/// `work/t1`, with t1's worktree checked out at `.radian/arc/worktrees/t1`. Returns the
/// workspace and the sha of `main`.
fn repo_with_task_branch(remote: &str) -> (Ws, String) {
    let mut ws = Ws::new();
    for (k, v) in GIT_ENV {
        ws.set_env(k, v);
    }
    let root = ws.root().to_path_buf();
    let bare = ws.base().join("remote.git");
    git(
        &ws,
        ws.base(),
        &[
            "init",
            "--quiet",
            "--bare",
            "-b",
            "main",
            bare.to_str().unwrap(),
        ],
    );

    git(&ws, &root, &["init", "--quiet", "-b", "main"]);
    git(&ws, &root, &["config", "user.name", "Hookq Test"]);
    git(&ws, &root, &["config", "user.email", "test@hookq.invalid"]);
    git(&ws, &root, &["config", "commit.gpgsign", "false"]);
    std::fs::write(root.join("README"), "hello\n").unwrap();
    git(&ws, &root, &["add", "README"]);
    git(&ws, &root, &["commit", "--quiet", "-m", "initial"]);
    git(
        &ws,
        &root,
        &["remote", "add", remote, bare.to_str().unwrap()],
    );
    git(&ws, &root, &["push", "--quiet", remote, "main"]);

    let out = ws.hookq(&["init", "--remote", remote]).ok();
    assert!(out.stdout().contains("wrote"), "{}", out.describe());
    std::fs::write(root.join(".git/info/exclude"), ".radian/\n").unwrap();

    git(&ws, &root, &["branch", "work/t1"]);
    let wt = ws.worktree("t1");
    git(
        &ws,
        &root,
        &[
            "worktree",
            "add",
            "--quiet",
            wt.to_str().unwrap(),
            "work/t1",
        ],
    );
    std::fs::write(wt.join("feature.txt"), "work\n").unwrap();
    git(&ws, &wt, &["add", "feature.txt"]);
    git(&ws, &wt, &["commit", "--quiet", "-m", "feature"]);
    git(&ws, &wt, &["push", "--quiet", remote, "work/t1"]);
    // Left over in the worktree: the removal must not trip over it.
    std::fs::write(wt.join("scratch.txt"), "untracked\n").unwrap();

    let main = git(&ws, &root, &["rev-parse", "main"]);
    (ws, main)
}

fn remote_has(ws: &Ws, remote: &str, branch: &str) -> bool {
    !git(
        ws,
        ws.root(),
        &["ls-remote", remote, &format!("refs/heads/{branch}")],
    )
    .is_empty()
}

fn local_has(ws: &Ws, branch: &str) -> bool {
    git_ok(
        ws,
        ws.root(),
        &[
            "show-ref",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ],
    )
}

fn assert_task_cleaned_up(ws: &Ws, remote: &str) {
    assert!(
        !remote_has(ws, remote, "work/t1"),
        "the remote branch is deleted"
    );
    assert!(!ws.worktree("t1").exists(), "the worktree is removed");
    assert!(!local_has(ws, "work/t1"), "the local branch is deleted");
    let worktrees = git(ws, ws.root(), &["worktree", "list", "--porcelain"]);
    assert!(
        !worktrees.contains("worktrees/t1"),
        "git forgot the worktree: {worktrees}"
    );
    // Nothing else was touched.
    assert!(remote_has(ws, remote, "main"));
    assert!(local_has(ws, "main"));
}

fn after_merge_lines_clean_up_and_are_idempotent(remote: &str) {
    let (ws, main) = repo_with_task_branch(remote);
    assert!(
        remote_has(&ws, remote, "work/t1")
            && local_has(&ws, "work/t1")
            && ws.worktree("t1").is_dir()
    );
    let check = ws.hookq(&["check"]).ok();
    assert!(
        check.stdout().contains("after_merge: 3 command(s)"),
        "{}",
        check.describe()
    );

    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    let out = ws
        .hookq(&["task", "move", "t1", "done.merged", "--merged-sha", &main])
        .ok();
    assert!(
        out.stdout()
            .contains("ran 1 point(s): 3 command(s), 0 failed"),
        "{}",
        out.describe()
    );
    assert_task_cleaned_up(&ws, remote);
    let history = ws.history();
    assert_eq!(history.len(), 3);
    assert!(
        history
            .iter()
            .all(|h| h.outcome == "ok" && h.exit_code == Some(0)),
        "{history:?}"
    );

    // Everything is gone already: running the point again succeeds line by line.
    ws.hookq(&["queue", "retry", &history[0].id.to_string()])
        .ok();
    assert_eq!(ws.pending().len(), 1);
    let out = ws.hookq(&["run"]).ok();
    assert!(
        out.stdout().contains("3 command(s), 0 failed"),
        "{}",
        out.describe()
    );
    let history = ws.history();
    assert_eq!(history.len(), 6);
    assert!(
        history
            .iter()
            .all(|h| h.outcome == "ok" && h.exit_code == Some(0)),
        "{history:?}"
    );
    let indices: Vec<Option<i64>> = history.iter().map(|h| h.command_index).collect();
    assert_eq!(
        indices,
        [Some(1), Some(2), Some(3), Some(1), Some(2), Some(3)]
    );

    // And once more through a fresh entry into done.merged.
    ws.hookq(&["task", "move", "t1", "todo.ready"]).ok();
    ws.hookq(&["task", "move", "t1", "done.merged"]).ok();
    let history = ws.history();
    assert_eq!(history.len(), 9);
    assert!(history.iter().all(|h| h.outcome == "ok"), "{history:?}");
    assert_task_cleaned_up(&ws, remote);
}

#[test]
fn init_after_merge_lines_with_origin() {
    after_merge_lines_clean_up_and_are_idempotent("origin");
}

#[test]
fn init_after_merge_lines_name_the_configured_remote() {
    after_merge_lines_clean_up_and_are_idempotent("upstream");
}

#[test]
fn an_unreachable_remote_fails_the_first_line_only() {
    let (ws, _) = repo_with_task_branch("origin");
    std::fs::rename(ws.base().join("remote.git"), ws.base().join("moved.git")).unwrap();
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    let out = ws
        .hookq(&["task", "move", "t1", "done.merged"])
        .expect_code(0);
    let warnings = out.warnings();
    assert_eq!(warnings.len(), 1, "{}", out.describe());
    assert!(warnings[0].contains("after_merge-01"), "{}", warnings[0]);
    let outcomes: Vec<String> = ws
        .history()
        .into_iter()
        .map(|h| h.outcome.to_string())
        .collect();
    assert_eq!(outcomes, ["failed", "ok", "ok"]);
    assert!(!ws.worktree("t1").exists());
    assert!(!local_has(&ws, "work/t1"));
}

/// A workspace repository with one commit on `main`, no remote, and `hookq init` run in it.
fn repo_without_remote() -> (Ws, common::Out) {
    let mut ws = Ws::new();
    for (k, v) in GIT_ENV {
        ws.set_env(k, v);
    }
    let root = ws.root().to_path_buf();
    git(&ws, &root, &["init", "--quiet", "-b", "main"]);
    git(&ws, &root, &["config", "commit.gpgsign", "false"]);
    std::fs::write(root.join("README"), "hello\n").unwrap();
    std::fs::write(root.join(".gitignore"), "*.tmp\n").unwrap();
    git(&ws, &root, &["add", "README", ".gitignore"]);
    git(&ws, &root, &["commit", "--quiet", "-m", "initial"]);
    let out = ws.hookq(&["init"]).ok();
    (ws, out)
}

#[test]
fn init_keeps_the_state_dir_out_of_git_status() {
    let (ws, out) = repo_without_remote();
    let exclude = ws.root().join(".git/info/exclude");
    assert!(
        out.stdout().contains(&format!(
            "added /.radian/arc/ to {} (git ignores the state dir)",
            exclude.display()
        )),
        "{}",
        out.describe()
    );
    assert_eq!(git(&ws, ws.root(), &["status", "--porcelain"]), "");
    assert_eq!(
        std::fs::read_to_string(ws.root().join(".gitignore")).unwrap(),
        "*.tmp\n",
        "the tracked .gitignore is not touched"
    );
    // Said and written once: a second init finds it ignored already.
    let again = ws.hookq(&["init"]).ok();
    assert!(!again.stdout().contains("added"), "{}", again.describe());
    let text = std::fs::read_to_string(&exclude).unwrap();
    assert_eq!(text.matches("/.radian/arc/").count(), 1, "{text}");

    // A workspace in a subfolder is excluded by its path from the repository's top.
    let sub = ws.root().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let out = ws.hookq(&["-C", sub.to_str().unwrap(), "init"]).ok();
    assert!(
        out.stdout().contains("added /sub/.radian/arc/ to"),
        "{}",
        out.describe()
    );
    assert_eq!(git(&ws, ws.root(), &["status", "--porcelain"]), "");
}

#[test]
fn init_outside_a_repository_says_the_after_merge_lines_need_one() {
    let ws = Ws::new();
    let out = ws.hookq(&["init"]).ok();
    let notes: Vec<&str> = out
        .stdout
        .split(|&b| b == b'\n')
        .filter_map(|l| std::str::from_utf8(l).ok())
        .filter(|l| l.starts_with("note:"))
        .collect();
    assert_eq!(notes.len(), 1, "{}", out.describe());
    assert!(
        notes[0].contains("not in a git repository: the default after_merge lines need one"),
        "{}",
        notes[0]
    );
}

#[test]
fn the_after_merge_lines_pass_in_a_repository_without_the_remote() {
    let (ws, out) = repo_without_remote();
    let notes: Vec<String> = out
        .stdout()
        .lines()
        .filter(|l| l.starts_with("note:"))
        .map(str::to_owned)
        .collect();
    assert_eq!(notes.len(), 1, "{}", out.describe());
    assert!(
        notes[0].starts_with("note: this repository has no remote origin"),
        "{}",
        notes[0]
    );
    git(&ws, ws.root(), &["branch", "work/t1"]);
    let wt = ws.worktree("t1");
    git(
        &ws,
        ws.root(),
        &[
            "worktree",
            "add",
            "--quiet",
            wt.to_str().unwrap(),
            "work/t1",
        ],
    );
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    let out = ws.hookq(&["task", "move", "t1", "done.merged"]).ok();
    assert!(
        out.stdout()
            .contains("ran 1 point(s): 3 command(s), 0 failed"),
        "{}",
        out.describe()
    );
    assert!(!wt.exists());
    assert!(!local_has(&ws, "work/t1"));
    let log = std::fs::read_to_string(ws.log_path("t1", "after_merge", 1)).unwrap();
    assert!(!log.contains("fatal:"), "{log}");
    assert!(log.contains("no remote origin"), "{log}");
    // Branch and worktree gone as well: every line still passes.
    ws.hookq(&["task", "move", "t1", "todo.ready"]).ok();
    ws.hookq(&["task", "move", "t1", "done.merged"]).ok();
    let history = ws.history();
    assert_eq!(history.len(), 6);
    assert!(history.iter().all(|h| h.outcome == "ok"), "{history:?}");
}

#[test]
fn a_refused_push_fails_the_first_line() {
    let (ws, _) = repo_with_task_branch("origin");
    let hook = ws.base().join("remote.git/hooks/pre-receive");
    std::fs::write(&hook, "#!/bin/sh\necho refused by policy >&2\nexit 1\n").unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    ws.hookq(&["task", "add", "t1", "--plan", "p"]).ok();
    let out = ws
        .hookq(&["task", "move", "t1", "done.merged"])
        .expect_code(0);
    let warnings = out.warnings();
    assert_eq!(warnings.len(), 1, "{}", out.describe());
    assert!(warnings[0].contains("after_merge-01"), "{}", warnings[0]);
    assert!(remote_has(&ws, "origin", "work/t1"));
    let log = std::fs::read_to_string(ws.log_path("t1", "after_merge", 1)).unwrap();
    assert!(log.contains("refused by policy"), "{log}");
}

/// A move into `done.merged` without `--merged-sha` gives `after_merge` the target branch's
/// head; a given sha wins; no repository or no branch: the move records, one warning line.
#[test]
fn a_merge_without_a_sha_gets_the_target_branch_head() {
    let ws = Ws::init();
    crate::support::merged::target_head_cases(&ws, &|cfg| ws.write(cfg));
}
