//! A host embedding hookq's worktree lifecycle: a scratch workspace of two git repositories,
//! the hook listing, a create whose post-create hook runs in each new worktree, a create that
//! fails and is rolled back, a dry run of a remove, and the remove itself. Every result is a
//! typed value; the JSON printed here is the one `hookq worktree … --json` prints.
//!
//! `cargo run --example embed_lifecycle` (needs git and bash).

use std::error::Error;
use std::path::Path;
use std::process::Command;

use hookq::lifecycle::{
    self, CreateRequest, InputPolicy, Notice, RemoveRequest, RunOptions, Worktrees,
};
use hookq::{Failure as _, Stop};

fn git(dir: &Path, args: &[&str]) -> Result<(), Box<dyn Error>> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "example")
        .env("GIT_AUTHOR_EMAIL", "example@invalid")
        .env("GIT_COMMITTER_NAME", "example")
        .env("GIT_COMMITTER_EMAIL", "example@invalid")
        .output()?;
    if !out.status.success() {
        return Err(format!("git {args:?}: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let scratch = tempfile::tempdir()?;
    let root = scratch.path().join("ws");
    for name in ["web", "api"] {
        let repo = root.join("repos").join(name);
        std::fs::create_dir_all(&repo)?;
        git(&repo, &["init", "-q", "-b", "main"])?;
        std::fs::write(repo.join("README"), format!("{name}\n"))?;
        git(&repo, &["add", "README"])?;
        git(&repo, &["commit", "-qm", "first"])?;
    }
    std::fs::create_dir_all(root.join(".arashi/hooks"))?;
    std::fs::write(
        root.join(".arashi/config.json"),
        r#"{"repos": {"web": {"path": "repos/web", "hooks": {"post-create": "touch SETUP"}},
                      "api": {"path": "repos/api"}}}"#,
    )?;

    // No home: the example must not run the user's own ~/.arashi hooks.
    let wt = Worktrees::discover(&root, None)?.on_notice(|n| {
        if let Notice::Warning(w) = n {
            eprintln!("warning: {w}");
        }
    });
    let stop = Stop::new();
    let opts = RunOptions {
        input: InputPolicy::Unavailable,
        json: false,
        stop: &stop,
    };

    let listing = wt.hooks()?;
    println!("== hooks: {}", serde_json::to_string_pretty(&listing)?);

    let req = CreateRequest {
        branch: "feature/embed".into(),
        ..CreateRequest::default()
    };
    let created = wt.create(&req, opts)?;
    for t in &created.worktrees {
        let setup = t.worktree_path.join("SETUP").exists();
        println!(
            "== made {} ({}), SETUP there: {setup}",
            t.worktree_path.display(),
            t.repository
        );
    }
    println!("== created: {}", serde_json::to_string_pretty(&created)?);

    // A workspace post-create that fails: the create's worktrees and branches are undone.
    std::fs::write(root.join(".arashi/hooks/post-create.sh"), "exit 3\n")?;
    let req = CreateRequest {
        branch: "feature/fails".into(),
        ..CreateRequest::default()
    };
    match wt.create(&req, opts) {
        Err(e @ lifecycle::Error::Create(_)) => {
            println!("== failed as expected, exit code {}: {e}", e.exit_code());
            for step in e.details().rolled_back.unwrap_or_default() {
                println!("   rolled back: {step}");
            }
        }
        other => return Err(format!("expected a rolled-back create, got {other:?}").into()),
    }
    std::fs::remove_file(root.join(".arashi/hooks/post-create.sh"))?;

    // The post-create hook left an untracked file: without force git keeps the worktree, and
    // the dry run refuses the remove as the real one would.
    let mut req = RemoveRequest {
        branch: "feature/embed".into(),
        dry_run: true,
        force: true,
        ..RemoveRequest::default()
    };
    let preview = wt.remove(&req, opts)?;
    println!(
        "== remove, dry run: {}",
        serde_json::to_string_pretty(&preview)?
    );
    req.dry_run = false;
    let removed = wt.remove(&req, opts)?;
    for r in removed.removals.iter().flatten() {
        println!(
            "== {} {}: {}",
            r.repository,
            r.worktree_path.display(),
            r.status
        );
    }
    Ok(())
}
