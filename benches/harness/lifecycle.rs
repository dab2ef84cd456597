//! Figures L1 and L2: what `hookq worktree create` costs against the bare git it runs, and what
//! each hook adds against a bare `bash -c true`, as medians of interleaved rounds in one run.
//! A hook's cost is its own span inside a create, as the create's ledger times it (from its
//! start to its end, output read and process reaped): measured where it happens, it cannot
//! read negative, as the difference of a create with hooks and one without could.
//! Two repositories of about 1,000 small files each: an empty repository's `git worktree add`
//! would cost less than hookq's own start. The last figures of a full run (their repositories'
//! files are many), or alone with `-- --lifecycle`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use hookq::Stop;
use hookq::lifecycle::{CreateRequest, InputPolicy, RunOptions, Status, Worktrees};

use super::report::{Row, Target};
use super::sizes::Sizes;
use super::stats::median;

/// The targets: create at most 1.15x the bare `git worktree add` calls; each hook at most 1.2x
/// a bare `bash -c true`.
pub const CREATE_TARGET: f64 = 1.15;
/// See [`CREATE_TARGET`].
pub const HOOK_TARGET: f64 = 1.2;

/// How many hooks the hooked workspace runs per create (every create location).
const HOOKS: usize = 6;

/// Files per repository of the workspace the hook figure creates in: few, as the git work
/// around the hooks is not what it times.
const HOOK_WS_FILES: usize = 10;

/// The figures of one run, milliseconds.
#[derive(Debug, Clone)]
pub struct Figures {
    /// Rounds measured.
    pub rounds: usize,
    /// Files per repository.
    pub files: usize,
    /// `hookq worktree create` of two repositories, no hooks.
    pub create_ms: f64,
    /// The two bare `git worktree add -b` calls it makes, one after the other.
    pub bare_ms: f64,
    /// One `true` hook's own span inside a create (the median of every hook of every round).
    pub hook_ms: f64,
    /// How many hook spans `hook_ms` is the median of.
    pub hooks_timed: usize,
    /// A create of two small repositories with six `true` hooks, through the library.
    pub hooked_ms: f64,
    /// One bare `bash -c true`.
    pub bash_ms: f64,
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@invalid")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@invalid")
        .stdin(Stdio::null())
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn make_repo(dir: &Path, files: usize) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    for i in 0..files {
        let sub = dir.join(format!("d{}", i / 100));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(format!("f{i}.txt")), format!("line {i}\n")).unwrap();
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "files"]);
}

/// A workspace root with `web` and `api` and the given `hooks` JSON object.
fn workspace(root: &Path, files: usize, hooks: &str) {
    for r in ["web", "api"] {
        make_repo(&root.join("repos").join(r), files);
    }
    std::fs::create_dir_all(root.join(".arashi")).unwrap();
    std::fs::write(
        root.join(".arashi/config.json"),
        format!(
            r#"{{"repos": {{"web": {{"path": "repos/web"}}, "api": {{"path": "repos/api"}}}}, "hooks": {hooks}}}"#
        ),
    )
    .unwrap();
}

fn timed(cmd: &mut Command) -> f64 {
    let t = Instant::now();
    let out = cmd.output().expect("spawn");
    let ms = t.elapsed().as_secs_f64() * 1e3;
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    ms
}

/// A create of `branch` in the hooked workspace `root` through the library, as `hookq worktree
/// create` runs it: its time and the spans of its hooks, all of which must have succeeded, ms.
fn hooked_create(root: &Path, home: &Path, branch: &str) -> (f64, Vec<f64>) {
    let stop = Stop::new();
    let opts = RunOptions {
        input: InputPolicy::Unavailable,
        json: false,
        stop: &stop,
    };
    let t = Instant::now();
    let wt = Worktrees::discover(root, Some(home.to_path_buf())).expect("the hooked workspace");
    let created = wt
        .create(
            &CreateRequest {
                branch: branch.into(),
                ..CreateRequest::default()
            },
            opts,
        )
        .expect("a create with hooks");
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let outcomes = &created.hook_outcomes.outcomes;
    assert_eq!(outcomes.len(), HOOKS, "{outcomes:?}");
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o.status, Status::Succeeded)),
        "{outcomes:?}"
    );
    let spans = outcomes
        .iter()
        .map(|o| o.duration.as_secs_f64() * 1e3)
        .collect();
    (ms, spans)
}

fn hookq(root: &Path, home: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hookq"));
    c.arg("-C")
        .arg(root)
        .args(args)
        .env("HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// Removes what a create of `branch` made in `root`, untimed.
fn undo(root: &Path, branch: &str) {
    for r in ["web", "api"] {
        let repo = root.join("repos").join(r);
        let wt = root.join("worktrees").join(r).join(branch);
        git(
            &repo,
            &["worktree", "remove", "--force", &wt.to_string_lossy()],
        );
        git(&repo, &["branch", "-D", branch]);
    }
}

/// Measures `rounds` interleaved rounds with repositories of `files` files, in a temp dir
/// under `base`.
pub fn run(base: &Path, rounds: usize, files: usize) -> Figures {
    let dir = tempfile::Builder::new()
        .prefix("hookq-bench-lifecycle-")
        .tempdir_in(base)
        .expect("temp dir");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let plain = dir.path().join("plain");
    let hooked = dir.path().join("hooked");
    let bare = dir.path().join("bare");
    let hook_files = HOOK_WS_FILES.min(files);
    workspace(&plain, files, "{}");
    workspace(
        &hooked,
        hook_files,
        r#"{"scripts": {"pre-create": "true", "post-create": "true"}}"#,
    );
    std::fs::create_dir_all(hooked.join(".arashi/hooks")).unwrap();
    for r in ["web", "api"] {
        for lc in ["pre-create", "post-create"] {
            std::fs::write(hooked.join(format!(".arashi/hooks/{lc}.{r}.sh")), "true\n").unwrap();
        }
    }
    for r in ["web", "api"] {
        make_repo(&bare.join("repos").join(r), files);
    }
    let bash = which_bash();
    let (mut c, mut b, mut h, mut t) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut spans = Vec::new();
    // One warm-up round, not counted: the first touch of each repository's objects.
    for round in 0..=rounds {
        let branch = format!("bench-{round}");
        let create = timed(&mut hookq(&plain, &home, &["worktree", "create", &branch]));
        undo(&plain, &branch);
        let mut bare_ms = 0.0;
        for r in ["web", "api"] {
            let repo = bare.join("repos").join(r);
            let wt = bare.join("worktrees").join(r).join(&branch);
            bare_ms += timed(
                Command::new("git")
                    .arg("-C")
                    .arg(&repo)
                    .args(["worktree", "add", "--quiet", "--no-track", "-b", &branch])
                    .arg(&wt)
                    .arg("HEAD")
                    .stdin(Stdio::null()),
            );
        }
        undo(&bare, &branch);
        let (with_hooks, hook_spans) = hooked_create(&hooked, &home, &branch);
        undo(&hooked, &branch);
        let bash_ms = timed(
            Command::new(&bash)
                .args(["-c", "true"])
                .stdin(Stdio::null()),
        );
        if round > 0 {
            c.push(create);
            b.push(bare_ms);
            spans.extend(hook_spans);
            h.push(with_hooks);
            t.push(bash_ms);
        }
    }
    Figures {
        rounds,
        files,
        create_ms: median(&c),
        bare_ms: median(&b),
        hook_ms: median(&spans),
        hooks_timed: spans.len(),
        hooked_ms: median(&h),
        bash_ms: median(&t),
    }
}

fn which_bash() -> PathBuf {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|d| d.is_absolute())
        .map(|d| d.join("bash"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("/bin/bash"))
}

/// Figures L1 and L2 at `sizes`, in a folder of their own under `dir`.
pub fn measure(dir: &Path, sizes: &Sizes) -> Figures {
    run(dir, sizes.lifecycle_rounds, sizes.lifecycle_files)
}

/// The table rows of L1 and L2.
pub fn rows(f: &Figures) -> Vec<Row> {
    vec![
        Row::new(
            "L1",
            format!(
                "lifecycle: `hookq worktree create`, 2 repositories x {} files, no hooks",
                f.files
            ),
            f.create_ms,
            "ms",
        )
        .vs("the two bare `git worktree add`", f.bare_ms)
        .target(Target::ratio_at_most(CREATE_TARGET))
        .note(format!(
            "medians of {} rounds, interleaved, after a warm-up; what a round made is undone, untimed",
            f.rounds
        )),
        Row::new(
            "L2",
            "lifecycle: one `true` hook's own span inside a create (start to reaped)",
            f.hook_ms,
            "ms",
        )
        .vs("bare `bash -c true`", f.bash_ms)
        .target(Target::ratio_at_most(HOOK_TARGET))
        .note(format!(
            "median of {} hooks, {HOOKS} a create, as the create's ledger times them; the creates (library, {}-file repositories) took {:.2} ms",
            f.hooks_timed,
            HOOK_WS_FILES.min(f.files),
            f.hooked_ms
        )),
    ]
}
