//! A command held at its gate (`exec::run_gated`): its shell starts, its process group is told to
//! the tracker, and nothing of the command runs until the caller says so, nor ever if the caller
//! says no or dies first. The queue counts a point's start at the gate, so a command that kills
//! its runner cannot run uncounted, or with its process group unknown to the next runner.

use std::cell::RefCell;
use std::path::Path;
use std::time::Duration;

use hookq::exec::{self, Ending, Environ, GroupTracker, Stop};

/// Records what it is told, in order.
#[derive(Debug, Default)]
struct Told(RefCell<Vec<String>>);

impl GroupTracker for Told {
    fn track(&self, pgid: i32, _started_ms: i64) {
        self.0.borrow_mut().push(format!("track {pgid}"));
    }
    fn untrack(&self, pgid: i32) {
        self.0.borrow_mut().push(format!("untrack {pgid}"));
    }
}

fn env() -> Environ {
    [("PATH", std::env::var_os("PATH").unwrap_or_default())]
        .into_iter()
        .collect()
}

fn spec<'a>(
    line: &'a str,
    log: &'a Path,
    env: &'a Environ,
    owner: Option<&'a dyn GroupTracker>,
) -> exec::Spec<'a> {
    exec::Spec {
        line,
        cwd: Path::new("/"),
        env,
        timeout: Duration::from_secs(30),
        kill_grace: Duration::from_secs(1),
        max_log_bytes: 1 << 20,
        log,
        opened: None,
        header: "gated",
        owner,
    }
}

/// Whether process `pid` has exited: gone, or a zombie waiting for whoever collects it.
fn exited(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the command name, which is in parentheses.
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

/// Whether process `pid` is blocked reading a pipe, as the kernel names where it sleeps.
fn waits_on_a_pipe(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/wchan")).is_ok_and(|w| w.contains("pipe_read"))
}

#[test]
fn a_gated_command_runs_once_its_group_is_named_and_its_caller_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (log, ran) = (dir.path().join("runs/a.log"), dir.path().join("ran"));
    let line = format!("echo ran > {}; echo out", ran.display());
    let env = env();
    let told = Told::default();
    let done = exec::run_gated(
        &spec(&line, &log, &env, Some(&told)),
        &Stop::new(),
        || {
            let shell: i32 = told.0.borrow()[0]
                .strip_prefix("track ")
                .and_then(|pgid| pgid.parse().ok())
                .expect("the shell's group was told first");
            told.0.borrow_mut().push("ready".into());
            // The shell (its group's leader) blocked on a read of its gate: as far as it gets
            // before the gate opens, since the command itself reads no pipe (or, ungated, it
            // ran, and the test says so at once).
            crate::support::eventually("the shell to wait at its gate", || {
                waits_on_a_pipe(shell) || ran.exists()
            });
            assert!(!ran.exists(), "the command ran before its gate opened");
            let logged = std::fs::read_to_string(&log).unwrap_or_default();
            assert_eq!(logged, "", "the log's header came before the gate");
            true
        },
        || {},
    )
    .unwrap()
    .expect("it ran");
    assert_eq!(done.ending, Ending::Exited(0));
    assert!(ran.exists());
    let told = told.0.into_inner();
    assert!(
        told.len() == 3 && told[0].starts_with("track ") && told[1] == "ready",
        "{told:?}"
    );
    assert_eq!(told[2], told[0].replace("track", "untrack"));
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].ends_with(" gated") && lines[1] == "out", "{text}");
    assert!(lines[2].starts_with("--- hookq exit 0 after "), "{text}");
}

#[test]
fn a_gate_that_stays_shut_runs_nothing_ends_the_shell_and_leaves_no_log() {
    let dir = tempfile::tempdir().unwrap();
    let (log, ran) = (dir.path().join("runs/a.log"), dir.path().join("ran"));
    let line = format!("echo ran > {}", ran.display());
    let env = env();
    let told = Told::default();
    let done = exec::run_gated(
        &spec(&line, &log, &env, Some(&told)),
        &Stop::new(),
        || false,
        || panic!("nothing runs, so nothing runs meanwhile"),
    )
    .unwrap();
    assert_eq!(done, None);
    assert!(!ran.exists(), "the command ran through a shut gate");
    assert!(
        !log.exists(),
        "a log was left for a command that did not run"
    );
    let told = told.0.into_inner();
    let pgid: i32 = told[0].strip_prefix("track ").unwrap().parse().unwrap();
    assert_eq!(told[1], format!("untrack {pgid}"));
    assert!(
        exited(pgid),
        "the shell was reaped before run_gated returned"
    );
}

#[test]
fn a_gated_shell_sees_the_descriptors_and_line_numbers_of_an_ungated_one() {
    let dir = tempfile::tempdir().unwrap();
    let env = env();
    // The shell's own open descriptors (a glob the shell expands itself, with no pipeline's
    // descriptors coming and going), then a command that is not there, on line 2.
    let line = "cd /proc/$$/fd && echo *\nno-such-command-here";
    let output = |gated: bool| {
        let log = dir.path().join(format!("{gated}.log"));
        let s = spec(line, &log, &env, None);
        let done = if gated {
            exec::run_gated(&s, &Stop::new(), || true, || {})
                .unwrap()
                .unwrap()
        } else {
            exec::run(&s, &Stop::new()).unwrap()
        };
        assert_eq!(done.ending, Ending::Exited(127));
        let text = std::fs::read_to_string(&log).unwrap();
        text.lines()
            .filter(|l| !l.starts_with("--- hookq "))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let (plain, gated) = (output(false), output(true));
    assert_eq!(gated, plain);
    assert!(plain[0].starts_with("0 1 "), "{plain:?}");
    assert!(plain[1].contains("2") && plain[1].contains("no-such-command-here"));
}

/// Names the folder a [`runner_process`] works in.
const RUNNER_ENV: &str = "HOOKQ_TEST_GATE_RUNNER";

#[test]
fn a_runner_killed_at_the_gate_leaves_a_shell_that_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let runner = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "gate::runner_process", "--test-threads=1"])
        .env(RUNNER_ENV, dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        runner.status.signal(),
        Some(9),
        "the runner killed itself at the gate: {}",
        String::from_utf8_lossy(&runner.stderr)
    );
    let pgid: i32 = std::fs::read_to_string(dir.path().join("pgid"))
        .unwrap()
        .parse()
        .unwrap();
    // The shell reads the end of its gate once its runner is gone, and exits.
    crate::support::eventually(&format!("the shell {pgid} to exit"), || exited(pgid));
    assert!(
        !dir.path().join("ran").exists(),
        "the command ran though its runner died before the gate opened"
    );
}

/// The runner of the test above, started by it with [`RUNNER_ENV`] set: it names the shell's
/// process group in a file, then SIGKILLs itself at the gate. Run without it (as every test run
/// does), it does nothing.
#[test]
fn runner_process() {
    let Some(dir) = std::env::var_os(RUNNER_ENV) else {
        return;
    };
    #[derive(Debug)]
    struct ToFile(std::path::PathBuf);
    impl GroupTracker for ToFile {
        fn track(&self, pgid: i32, _started_ms: i64) {
            std::fs::write(self.0.join("pgid"), pgid.to_string()).unwrap();
        }
        fn untrack(&self, _pgid: i32) {}
    }
    let dir = Path::new(&dir);
    let (log, ran) = (dir.join("a.log"), dir.join("ran"));
    let line = format!("echo ran > {}", ran.display());
    let env = env();
    let named = ToFile(dir.to_path_buf());
    let _ = exec::run_gated(
        &spec(&line, &log, &env, Some(&named)),
        &Stop::new(),
        || {
            let me = rustix::process::getpid();
            let _ = rustix::process::kill_process(me, rustix::process::Signal::KILL);
            // The signal lands meanwhile: the gate must never be answered.
            std::thread::sleep(Duration::from_secs(60));
            true
        },
        || {},
    );
    unreachable!("the runner was killed at the gate");
}
