//! A create killed outright (SIGKILL) at random moments, inside hooks and git steps alike:
//! after each kill the next `hookq worktree` command rolls the dead create back, and the
//! worktrees, branches and folders are what they were before it, unless the create had
//! completed. `HOOKQ_CRASH_KILLS` sets how many kills (default 100).

use crate::support::lifecycle as lifecycle_common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use lifecycle_common::{Ws, git, inline, make_repo, tree};

/// One repository set: where its repositories and new worktrees are.
struct Set {
    ws: Ws,
    repos: Vec<PathBuf>,
    worktrees: PathBuf,
    /// Where `create B` puts each repository's worktree.
    layout: fn(&Set, &str) -> Vec<PathBuf>,
}

impl Set {
    fn snapshot(&self) -> String {
        let mut s = String::new();
        for r in &self.repos {
            s += &git(r, &["worktree", "list", "--porcelain"]);
            s += &git(r, &["for-each-ref", "--format=%(refname) %(objectname)"]);
        }
        s + &tree(&self.worktrees)
    }
}

fn configured() -> Set {
    let config = format!(
        r#"{{"repos": {{"web": {{"path": "repos/web"}}, "api": {{"path": "repos/api"}}}},
            "hooks": {{"scripts": {{"pre-create": {}}}}}}}"#,
        serde_json::to_string(&inline("sleep 0.01")).unwrap()
    );
    let ws = Ws::bare();
    for r in ["web", "api"] {
        make_repo(&ws.root.join("repos").join(r), 60);
    }
    ws.write_config(&config);
    for h in [
        "pre-create.web",
        "post-create.web",
        "pre-create.api",
        "post-create.api",
        "post-create",
    ] {
        ws.native(&format!(".arashi/hooks/{h}.sh"), "sleep 0.01\n");
    }
    Set {
        repos: vec![ws.root.join("repos/web"), ws.root.join("repos/api")],
        worktrees: ws.root.join("worktrees"),
        layout: |s, b| {
            ["web", "api"]
                .iter()
                .map(|r| s.ws.root.join("worktrees").join(r).join(b))
                .collect()
        },
        ws,
    }
}

fn standalone() -> Set {
    let ws = Ws::bare();
    make_repo(&ws.root.join("app"), 60);
    ws.native("~/.arashi/hooks/app/pre-create.sh", "sleep 0.01\n");
    ws.native("~/.arashi/hooks/post-create.sh", "sleep 0.01\n");
    ws.native("~/.arashi/hooks/app/post-create.sh", "sleep 0.01\n");
    Set {
        repos: vec![ws.root.join("app")],
        worktrees: ws.root.join("app.worktrees"),
        layout: |s, b| vec![s.ws.root.join("app.worktrees").join(b)],
        ws,
    }
}

fn start(set: &Set) -> &Path {
    &set.repos[0]
}

/// A small deterministic generator: the seed is printed, so a failing run can be replayed.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

#[test]
fn a_killed_create_is_rolled_back_by_the_next_command() {
    let want: usize = std::env::var("HOOKQ_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let seed = std::env::var("HOOKQ_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("crash test seed {seed} (HOOKQ_CRASH_SEED replays it)");
    let mut rng = Lcg(seed);
    let sets = [configured(), standalone()];
    // How long an undisturbed create takes, per set: kills land anywhere in it.
    let mut spans = Vec::new();
    for set in &sets {
        let t = Instant::now();
        set.ws
            .run_in(start(set), &["worktree", "create", "warmup"])
            .expect(0);
        spans.push(t.elapsed());
        set.ws
            .run_in(start(set), &["worktree", "remove", "warmup"])
            .expect(0);
    }
    let (mut kills, mut rolled_back, mut completed) = (0, 0, 0);
    // Where the kills landed, read from the dead create's journal before the next command:
    // before any change, inside a `git worktree add`, or after one (in a hook).
    let (mut before_change, mut in_git, mut after_add) = (0, 0, 0);
    let mut round = 0;
    while kills < want {
        round += 1;
        assert!(
            round < want * 4,
            "too few kills landed: {kills} in {round} rounds"
        );
        let which = round % 2;
        let set = &sets[which];
        let branch = format!("crash-{round}");
        let before = set.snapshot();
        let printed = set.ws.tmp.path().join("killed.out");
        let out = std::fs::File::create(&printed).unwrap();
        let mut child = set
            .ws
            .command(start(set), &["worktree", "create", &branch])
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap();
        let span = spans[which].as_micros() as u64;
        // A random moment to kill it at: what the test varies, not a wait for anything.
        std::thread::sleep(Duration::from_micros(rng.next() % (span + span / 10 + 1)));
        let finished = child.try_wait().unwrap().is_some();
        if !finished {
            child.kill().unwrap();
            kills += 1;
        }
        let status = child.wait().unwrap();
        if !finished {
            let standalone = set.repos[0].join(".git/hookq-worktree/journal");
            let journal = if standalone.exists() {
                standalone
            } else {
                set.ws.root.join(".arashi/hookq-worktree/journal")
            };
            let text = std::fs::read_to_string(&journal).unwrap_or_default();
            let last_add = text
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .rfind(|r| r["op"] == "worktree")
                .and_then(|r| r["path"].as_str().map(PathBuf::from));
            match last_add {
                None => before_change += 1,
                // git writes the new worktree's files last of all.
                Some(p) if p.join("f59.txt").exists() => after_add += 1,
                Some(_) => in_git += 1,
            }
        }
        let text = std::fs::read_to_string(&printed).unwrap_or_default();
        assert!(!text.contains(lifecycle_common::MARKER), "{text}");
        // The next command, whichever: the inspector here.
        let next = set.ws.run_in(start(set), &["worktree", "hooks"]);
        next.expect(0);
        let after = set.snapshot();
        if after == before {
            if next.stderr.contains("rolled back a create") {
                rolled_back += 1;
            }
            continue;
        }
        // Not as before: the create must have completed, all of it, and nothing rolled back.
        assert!(
            !next.stderr.contains("rolled back"),
            "round {round} (seed {seed}): a rollback left changes behind:\n{}\nbefore:\n{before}\nafter:\n{after}",
            next.stderr
        );
        for (repo, wt) in set.repos.iter().zip((set.layout)(set, &branch)) {
            let list = git(repo, &["worktree", "list", "--porcelain"]);
            assert!(
                list.contains(&format!("worktree {}\n", wt.display()))
                    && list.contains(&format!("branch refs/heads/{branch}\n")),
                "round {round} (seed {seed}, exit {status:?}): a partial create survived:\n{after}\nnext: {}",
                next.stderr
            );
        }
        completed += 1;
        set.ws
            .run_in(start(set), &["worktree", "remove", &branch])
            .expect(0);
    }
    eprintln!(
        "{kills} kills in {round} rounds: {rolled_back} rolled back something, {completed} completed; \
         {before_change} before any change, {in_git} inside a git worktree add, {after_add} after one"
    );
    assert!(
        before_change > 0 && after_add > 0,
        "the kills did not spread over the create"
    );
    assert!(
        rolled_back * 3 >= kills,
        "most kills should land after the first change: {rolled_back} of {kills}"
    );
}

/// A hook that is still running when its create is killed (it and a background child of its
/// own, sleeping in the new worktree) is ended by the next command's rollback, before the
/// worktree it works in is removed: nothing of the dead create keeps running.
#[test]
fn the_rollback_of_a_killed_create_ends_the_hook_it_left_running() {
    let ws = Ws::bare();
    make_repo(&ws.root.join("repos/web"), 5);
    ws.write_config(r#"{"repos": {"web": {"path": "repos/web"}}}"#);
    let pids = ws.tmp.path().join("hook-pids");
    ws.native(
        ".arashi/hooks/pre-create.web.sh",
        &format!(
            "trap '' TERM; sleep 300 & echo \"$$ $!\" > {}; wait\n",
            pids.display()
        ),
    );
    let before = ws.snapshot();
    let mut child = ws
        .command(&ws.root, &["worktree", "create", "doomed"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The hook can write its pids before hookq has named its process group in the journal:
    // the kill waits for both, or it would test a create killed a moment before that.
    let journal = ws.root.join(".arashi/hookq-worktree/journal");
    crate::support::eventually("the hook to start", || {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the create ended early"
        );
        std::fs::read_to_string(&pids).is_ok_and(|t| t.ends_with('\n'))
            && std::fs::read_to_string(&journal).is_ok_and(|t| t.contains("\"op\":\"hook\""))
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let text = std::fs::read_to_string(&pids).unwrap();
    let running: Vec<i32> = text
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    let alive = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| !s[s.rfind(')').unwrap() + 2..].starts_with('Z'))
    };
    assert!(running.iter().all(|&p| alive(p)), "the hook outlives hookq");

    let next = ws.run_in(&ws.root, &["worktree", "hooks"]);
    next.expect(0);
    assert!(
        next.stderr.contains("ended the hook it left running"),
        "{}",
        next.stderr
    );
    // The hook ignores SIGTERM: SIGKILL after the grace ended it and its child.
    crate::support::eventually("the hook and its child to end", || {
        !running.iter().any(|&p| alive(p))
    });
    assert_eq!(ws.snapshot(), before, "{}", next.stderr);
}
