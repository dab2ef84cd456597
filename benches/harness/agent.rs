//! Figures 7a-7c, agent tool hooks: what deciding costs a host, in the library (in-process) and
//! from a cold `hookq agent fire` process, each against its bare equivalent in the same run,
//! medians of interleaved rounds.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use hookq::agent::{Agent, Options, ToolCall, Verdict};
use serde_json::json;

use super::proc::hookq_bin;
use super::report::{Row, Target};
use super::sizes::{Mode, Sizes};
use super::stats::{median, ms};

/// Entries loaded for 7a.
pub const ENTRIES: usize = 50;

/// What 7a-7c measured.
#[derive(Debug, Clone)]
pub struct Measured {
    /// 7a: one PreToolUse that no entry matches, 50 entries loaded, µs (median of rounds).
    pub no_match_us: f64,
    /// 7b: one PreToolUse running one matching `true` hook, ms (median of rounds).
    pub one_hook_ms: f64,
    /// 7b's floor: a bare `/bin/sh -c true` with piped stdin, stdout and stderr, ms.
    pub bare_spawn_ms: f64,
    /// 7c: a cold `hookq agent fire PreToolUse` with no matching hook, ms.
    pub cold_fire_ms: f64,
    /// 7c's floor: a cold `hookq --version`, ms.
    pub cold_version_ms: f64,
    /// Rounds and the work in each, for the notes.
    pub rounds: usize,
    calls: usize,
    spawns: usize,
    processes: usize,
}

fn workspace(dir: &Path, name: &str, entries: &[serde_json::Value]) -> std::path::PathBuf {
    let root = dir.join(name);
    std::fs::create_dir_all(root.join(".radian")).expect("bench workspace");
    std::fs::write(
        root.join(".radian/hooks.json"),
        json!({ "PreToolUse": entries }).to_string(),
    )
    .expect("hooks.json");
    root
}

fn agent(root: &Path) -> Agent {
    let mut opts = Options::new(root);
    opts.trusted = true;
    opts.user_config = None;
    let agent = Agent::load(&opts);
    assert!(agent.warnings().is_empty(), "{:?}", agent.warnings());
    agent
}

fn call() -> ToolCall {
    ToolCall {
        tool_name: "shell".into(),
        tool_input: json!({"command": "make check"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        session_id: "bench".into(),
    }
}

/// A bare `/bin/sh -c true` with stdin, stdout and stderr piped, read to their end and reaped.
fn bare_spawn() {
    let mut child = Command::new("/bin/sh")
        .args(["-c", "true"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn /bin/sh");
    drop(child.stdin.take());
    let mut sink = Vec::new();
    let _ = child.stdout.take().map(|mut o| o.read_to_end(&mut sink));
    let _ = child.stderr.take().map(|mut e| e.read_to_end(&mut sink));
    assert!(child.wait().expect("wait").success());
}

/// A cold `hookq ARGS` with `stdin` written and output read, ms.
fn cold(args: &[&str], cwd: &Path, stdin: &[u8]) -> f64 {
    let t = Instant::now();
    let mut child = Command::new(hookq_bin())
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn hookq");
    if let Some(mut input) = child.stdin.take() {
        input.write_all(stdin).expect("payload");
    }
    let out = child.wait_with_output().expect("hookq");
    let took = ms(t.elapsed());
    assert!(
        out.status.success(),
        "hookq {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

/// Measures 7a-7c in workspaces under `dir`.
pub fn measure(dir: &Path, sizes: &Sizes) -> Measured {
    let (rounds, calls, spawns, processes) = match sizes.mode {
        Mode::Full => (11, 2_000, 40, 20),
        Mode::Smoke => (1, 10, 2, 2),
    };
    let never: Vec<_> = (0..ENTRIES)
        .map(|i| {
            json!({"matcher": format!("server{i}__write|mcp{i}__.*"),
                   "hooks": [{"type": "command", "command": format!("echo {i}")}]})
        })
        .collect();
    let many = agent(&workspace(dir, "agent-50", &never));
    let one = agent(&workspace(
        dir,
        "agent-true",
        &[json!({"matcher": "shell", "hooks": [{"type": "command", "command": "true"}]})],
    ));
    let cold_root = workspace(
        dir,
        "agent-cold",
        &[json!({"matcher": "write", "hooks": [{"type": "command", "command": "true"}]})],
    );
    let call = call();
    let payload = json!({"tool_name": "shell", "tool_input": {"command": "make check"}, "session_id": "bench"})
        .to_string();
    let fire_args = [
        "agent",
        "fire",
        "PreToolUse",
        "--trusted",
        "--config",
        "/nonexistent/radian/config.toml",
    ];
    assert_eq!(many.pre_tool_use(&call).decision, Verdict::Continue);
    assert_eq!(one.pre_tool_use(&call).hooks.len(), 1);

    let (mut no_match, mut hook, mut bare, mut fire, mut version) =
        (vec![], vec![], vec![], vec![], vec![]);
    for _ in 0..rounds {
        let t = Instant::now();
        for _ in 0..calls {
            std::hint::black_box(many.pre_tool_use(&call));
        }
        no_match.push(ms(t.elapsed()) * 1e3 / calls as f64);

        // Interleaved one by one, so both see the same machine.
        let (mut h, mut b) = (vec![], vec![]);
        for _ in 0..spawns {
            let t = Instant::now();
            bare_spawn();
            b.push(ms(t.elapsed()));
            let t = Instant::now();
            let d = one.pre_tool_use(&call);
            h.push(ms(t.elapsed()));
            assert_eq!(d.decision, Verdict::Continue, "{d:?}");
        }
        hook.push(median(&h));
        bare.push(median(&b));

        let (mut f, mut v) = (vec![], vec![]);
        for _ in 0..processes {
            v.push(cold(&["--version"], &cold_root, b""));
            f.push(cold(&fire_args, &cold_root, payload.as_bytes()));
        }
        fire.push(median(&f));
        version.push(median(&v));
    }
    Measured {
        no_match_us: median(&no_match),
        one_hook_ms: median(&hook),
        bare_spawn_ms: median(&bare),
        cold_fire_ms: median(&fire),
        cold_version_ms: median(&version),
        rounds,
        calls,
        spawns,
        processes,
    }
}

/// The rows of 7a-7c.
pub fn rows(m: &Measured) -> Vec<Row> {
    vec![
        Row::new(
            "7a",
            format!("agent: PreToolUse that no entry matches, {ENTRIES} entries loaded (library)"),
            m.no_match_us,
            "us",
        )
        .target(Target::value_at_most(20.0))
        .note(format!(
            "median of {} rounds of {} calls",
            m.rounds, m.calls
        )),
        Row::new(
            "7b",
            "agent: PreToolUse with one matching `true` hook (library)",
            m.one_hook_ms,
            "ms",
        )
        .vs("sh -c true, stdin/stdout/stderr piped", m.bare_spawn_ms)
        .target(Target::ratio_at_most(1.15))
        .note(format!(
            "medians of {} rounds of {} each, interleaved one by one",
            m.rounds, m.spawns
        )),
        Row::new(
            "7c",
            "agent: cold `hookq agent fire PreToolUse`, no matching hook",
            m.cold_fire_ms,
            "ms",
        )
        .vs("cold `hookq --version`", m.cold_version_ms)
        .target(Target::ratio_at_most(1.5))
        .note(format!(
            "medians of {} rounds of {} each, interleaved one by one",
            m.rounds, m.processes
        )),
    ]
}
