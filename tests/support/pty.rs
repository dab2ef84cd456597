//! A real pseudo-terminal for the `tty` input tests: the command runs as the session leader
//! with the pty's slave as its controlling terminal and stdin/stdout/stderr; the test reads
//! and writes the master. Every wait is bounded.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A command running on a pty.
pub struct Pty {
    master: File,
    child: Child,
    seen: Arc<Mutex<Vec<u8>>>,
    /// Set once the reader has read all there is: the last holder of the pty's other end closed
    /// it.
    closed: Arc<AtomicBool>,
}

impl Pty {
    /// Starts `cmd` on a new pty.
    // A test sets up the processes it drives with calls only the C library offers; the crate
    // itself keeps them in `exec::sys`.
    #[allow(unsafe_code)]
    pub fn spawn(mut cmd: Command) -> Pty {
        let (mut m, mut s) = (0, 0);
        // SAFETY: openpty writes two descriptors into the given ints.
        let rc = unsafe {
            libc::openpty(
                &mut m,
                &mut s,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: fresh descriptors we own.
        let master = unsafe { OwnedFd::from_raw_fd(m) };
        // SAFETY: likewise.
        let slave = unsafe { OwnedFd::from_raw_fd(s) };
        let sfd = slave.as_raw_fd();
        cmd.stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: setsid and ioctl are async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let _ = sfd;
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap();
        let master = File::from(master);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut reader = master.try_clone().unwrap();
        let sink = Arc::clone(&seen);
        let closed = Arc::new(AtomicBool::new(false));
        let reader_done = Arc::clone(&closed);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => sink.lock().unwrap().extend_from_slice(&buf[..n]),
                }
            }
            reader_done.store(true, Ordering::SeqCst);
        });
        Pty {
            master,
            child,
            seen,
            closed,
        }
    }

    /// Everything the terminal showed so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.seen.lock().unwrap()).into_owned()
    }

    /// Waits until the terminal showed `needle`; after [`super::HANG`] fails with what it showed.
    #[track_caller]
    pub fn wait_for(&self, needle: &str) {
        super::poll(
            &format!("the terminal to show {needle:?}"),
            Duration::from_millis(10),
            || self.text().contains(needle).then_some(()),
            || format!("it showed:\n{}", self.text()),
        );
    }

    /// Types `bytes`.
    pub fn send(&mut self, bytes: &[u8]) {
        self.master.write_all(bytes).unwrap();
        self.master.flush().unwrap();
    }

    /// Waits for the command to end, at most `limit` (then kills it and panics), and for the
    /// terminal to close, so that all it showed has been read.
    pub fn wait(&mut self, limit: Duration) -> ExitStatus {
        let Some(s) = super::run::wait_until(&mut self.child, limit) else {
            let _ = self.child.kill();
            panic!("the command on the pty hung; it showed:\n{}", self.text());
        };
        super::poll(
            "the terminal to close after the command ended",
            Duration::from_millis(10),
            || self.closed.load(Ordering::SeqCst).then_some(()),
            || format!("it showed:\n{}", self.text()),
        );
        assert!(
            !self.text().contains(super::lifecycle::MARKER),
            "an inline snippet's text reached the terminal:\n{}",
            self.text()
        );
        s
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
