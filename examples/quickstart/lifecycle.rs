//! The quick start's worktree lifecycle part: a scratch workspace holding one git repository
//! and a post-create hook, a worktree created through the library (the hook runs in it), the
//! outcome ledger, and the worktree removed again.

use std::error::Error;
use std::path::Path;
use std::process::Command;

use hookq::Stop;
use hookq::lifecycle::{CreateRequest, InputPolicy, Ledger, RemoveRequest, RunOptions, Worktrees};

fn git(dir: &Path, args: &[&str]) -> Result<(), Box<dyn Error>> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "quickstart")
        .env("GIT_AUTHOR_EMAIL", "quickstart@invalid")
        .env("GIT_COMMITTER_NAME", "quickstart")
        .env("GIT_COMMITTER_EMAIL", "quickstart@invalid")
        .output()?;
    if !out.status.success() {
        return Err(format!("git {args:?}: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(())
}

fn print_ledger(ledger: &Ledger) {
    for o in &ledger.outcomes {
        let src = o.hook.source.script_path().map_or_else(
            || o.hook.source.kind().to_string(),
            |p| p.display().to_string(),
        );
        println!(
            "    {:<12} {:<16} {:<10} {:<10} {} ms  ({src})",
            o.hook.lifecycle.as_str(),
            o.hook.name,
            o.hook.scope.as_str(),
            o.status.as_str(),
            o.duration.as_millis()
        );
    }
    let c = ledger.counts();
    println!(
        "    hooks: {} succeeded, {} skipped, {} failed",
        c.succeeded, c.skipped, c.failed
    );
}

/// Runs the tour in `dir` (a scratch folder the caller removes).
pub fn tour(dir: &Path) -> Result<(), Box<dyn Error>> {
    println!();
    println!("Worktree lifecycle hooks (`hookq worktree`, docs/lifecycle.md)");
    println!("--------------------------------------------------------------");
    let root = dir.join("lifecycle-ws");
    let repo = root.join("repos/app");
    std::fs::create_dir_all(&repo)?;
    git(&repo, &["init", "-q", "-b", "main"])?;
    std::fs::write(repo.join("README"), "app\n")?;
    git(&repo, &["add", "README"])?;
    git(&repo, &["commit", "-qm", "first"])?;
    std::fs::create_dir_all(root.join(".arashi/hooks"))?;
    std::fs::write(
        root.join(".arashi/config.json"),
        r#"{"repos": {"app": {"path": "repos/app"}}}"#,
    )?;
    let hook = "[ \"$PWD\" = \"$ARASHI_HOOK_TARGET_WORKTREE_PATH\" ] || exit 1\n\
                echo \"set up by $ARASHI_HOOK_NAME for branch $ARASHI_BRANCH_NAME\" > SETUP.txt\n";
    std::fs::write(root.join(".arashi/hooks/post-create.app.sh"), hook)?;
    println!("  a workspace with one repository, repos/app, and .arashi/hooks/post-create.app.sh:");
    for line in hook.lines() {
        println!("    | {line}");
    }

    // No home: the tour must not run the user's own ~/.arashi hooks.
    let wt = Worktrees::discover(&root, None)?;
    let stop = Stop::new();
    let opts = RunOptions {
        input: InputPolicy::Unavailable,
        json: false,
        stop: &stop,
    };

    println!();
    println!("  hookq worktree create feature/tour");
    let req = CreateRequest {
        branch: "feature/tour".into(),
        ..CreateRequest::default()
    };
    // A failure comes back as an error after everything this create made was rolled back.
    let created = wt.create(&req, opts)?;
    let wt_path = &created.worktrees[0].worktree_path;
    println!("    made {}", wt_path.display());
    println!(
        "    its SETUP.txt: {}",
        std::fs::read_to_string(wt_path.join("SETUP.txt"))?.trim()
    );
    print_ledger(&created.hook_outcomes);

    println!();
    println!("  hookq worktree remove feature/tour");
    let req = RemoveRequest {
        branch: "feature/tour".into(),
        force: true,
        ..RemoveRequest::default()
    };
    let removed = wt.remove(&req, opts)?;
    for r in removed.removals.iter().flatten() {
        println!(
            "    {} {}: {}",
            r.repository,
            r.worktree_path.display(),
            r.status
        );
    }
    print_ledger(&removed.hook_outcomes);
    println!("  (the branch stays; a failing hook would have rolled the create back)");
    Ok(())
}
