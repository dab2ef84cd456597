//! A timed-out command whose process group holds only zombies has ended. A zombie is a process
//! that exited and waits for its parent to collect it; after SIGTERM ends a command, its orphans
//! wait for init, which on some machines (this one's PID 1 takes 1-2 s) collects them late.
//! Counting them as alive made hookq wait out the whole grace period and SIGKILL a group that was
//! already gone, and report the command as killed. Its own binary: the test makes its process a
//! child subreaper, which every other test in the same process would feel.

use std::path::Path;
use std::time::Duration;

use hookq::exec::Environ;
use hookq::exec::{self, Ending, Stop};

#[test]
fn a_group_left_with_only_zombies_after_the_timeouts_sigterm_has_ended() {
    // The command's orphans come to this process and stay zombies until it collects them: the
    // slow init, made certain.
    rustix::process::set_child_subreaper(Some(rustix::process::getpid())).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let env: Environ = std::env::vars_os().collect();
    // `sleep` is the shell's child in the shell's group; SIGTERM ends both, and the shell, the
    // leader, is collected by hookq: `sleep` is left a zombie of this process.
    let spec = exec::Spec {
        line: "sleep 60 & wait",
        cwd: Path::new("/"),
        env: &env,
        timeout: Duration::from_secs(1),
        // Long, so that waiting it out cannot pass for the group having ended.
        kill_grace: Duration::from_secs(60),
        max_log_bytes: 1 << 20,
        log: &log,
        opened: None,
        header: "zombies",
        owner: None,
    };
    let done = exec::run(&spec, &Stop::new()).unwrap();
    // Collect the zombie now that hookq has judged the group.
    while let Ok(Some(_)) = rustix::process::waitpid(None, rustix::process::WaitOptions::NOHANG) {}
    assert_eq!(
        done.ending,
        Ending::TimedOut { killed: false },
        "SIGTERM ended the group; only a zombie was left"
    );
}
