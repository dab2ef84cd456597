//! `ARC_MERGED_SHA` when the move into `done.merged` gives no sha: read from the target
//! branch of the workspace's real git repository as the move records. The `queue` binary runs
//! it on SQLite, the `postgres` binary on a queue there.

use crate::support::git::git;
use crate::support::queue::{Config, Ws};

/// What `after_merge` saw: one `<task> <sha or unset>` line a run (and a command for the
/// rework between two merges).
const HOOK: &str = r#"after_merge = ['echo "$ARC_TASK ${ARC_MERGED_SHA-unset}" >> shas']
after_rework = ['true']
"#;

/// Runs the cases on `ws` (after `hookq init`, its queue where the caller put it), writing
/// each config with `write`.
pub fn target_head_cases(ws: &Ws, write: &dyn Fn(&Config)) {
    let root = ws.root();
    git(root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join(".git/info/exclude"), ".radian/\nshas\n").unwrap();
    git(root, &["commit", "-q", "--allow-empty", "-m", "one"]);
    git(root, &["branch", "release"]);
    git(root, &["commit", "-q", "--allow-empty", "-m", "two"]);
    let head = |b: &str| git(root, &["rev-parse", b]).trim().to_owned();
    let (main, release) = (head("main"), head("release"));
    assert_ne!(main, release);
    for t in ["t1", "t2", "t3", "t4", "t5"] {
        ws.task_add(t, "p", "todo.ready").ok();
    }
    let merge = |task: &str, extra: &[&str]| {
        let mut args = vec!["task", "move", task, "done.merged"];
        args.extend_from_slice(extra);
        ws.hookq(&args)
    };
    let seen = || ws.lines("shas").last().cloned().unwrap_or_default();

    // integration.target_branch names the branch read.
    let mut cfg = Config::hooks(HOOK);
    cfg.target_branch = Some("release".into());
    write(&cfg);
    merge("t1", &[]).ok();
    assert_eq!(seen(), format!("t1 {release}"));
    // A given sha wins.
    merge("t2", &["--merged-sha", "abcdef12"]).ok();
    assert_eq!(seen(), "t2 abcdef12");
    // Without it, repository.main_branch; read in the workspace's repository even when the
    // caller's environment points git elsewhere.
    cfg.target_branch = None;
    write(&cfg);
    ws.hookq_env(
        &["task", "move", "t3", "done.merged"],
        &[
            ("GIT_DIR", "/nonexistent/.git"),
            ("GIT_WORK_TREE", "/nonexistent"),
        ],
    )
    .ok();
    assert_eq!(seen(), format!("t3 {main}"));
    let shown = ws.hookq(&["task", "show", "t3"]).ok();
    assert!(
        shown.stdout().contains(&format!("merged   {main}")),
        "kept with the task: {}",
        shown.describe()
    );

    // No such branch: the move records, says why once, and the hook has no sha; a task merged
    // before keeps no stale one.
    cfg.main_branch = "gone".into();
    write(&cfg);
    let out = merge("t4", &[]).expect_code(0);
    assert!(
        out.stdout().contains("recorded after_merge"),
        "{}",
        out.describe()
    );
    let warnings = out.warnings();
    assert_eq!(warnings.len(), 1, "{}", out.describe());
    assert!(
        warnings[0].contains("ARC_MERGED_SHA") && warnings[0].contains("gone"),
        "{}",
        out.describe()
    );
    assert_eq!(seen(), "t4 unset");
    ws.hookq(&["task", "move", "t1", "review.rework_pending"])
        .ok();
    assert_eq!(merge("t1", &[]).warnings().len(), 1);
    assert_eq!(seen(), "t1 unset");

    // No repository at all.
    cfg.main_branch = "main".into();
    write(&cfg);
    std::fs::remove_dir_all(root.join(".git")).unwrap();
    let out = merge("t5", &[]).expect_code(0);
    assert!(
        out.stdout().contains("recorded after_merge"),
        "{}",
        out.describe()
    );
    assert_eq!(out.warnings().len(), 1, "{}", out.describe());
    assert!(
        out.warnings()[0].contains("not a git repository"),
        "{}",
        out.describe()
    );
    assert_eq!(seen(), "t5 unset");
    assert_eq!(ws.lines("shas").len(), 6, "one run a merge");
}
