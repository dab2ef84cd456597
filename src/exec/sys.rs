//! Every call into the C library that the compiler cannot check, each behind a safe function
//! that upholds what the call needs: starting a command with `posix_spawn`, the signal
//! dispositions and handlers hookq installs, a signal blocked around a terminal call, a POSIX
//! record lock, a git child that dies with hookq, the clock tick. The rest of the crate denies
//! `unsafe` (the `[lints]` table of `Cargo.toml`); this module alone allows it, and every block
//! says why it is sound.
//!
//! glibc and Linux: `posix_spawn_file_actions_addchdir_np` and `_addtcsetpgrp_np`,
//! `PR_SET_PDEATHSIG`.
#![allow(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::ffi::{CStr, c_char, c_int};
use std::fs::File;
use std::io;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use super::env::Environ;
use super::types::Stop;

fn check(rc: c_int) -> io::Result<()> {
    match rc {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// `-1` from a call that sets `errno`: that error.
fn check_errno(rc: c_int) -> io::Result<()> {
    if rc == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// A `posix_spawn_file_actions_t` or `posix_spawnattr_t`: set up by its `init` function, and
/// given back to its `destroy` function on drop.
struct Initialised<T> {
    value: Box<MaybeUninit<T>>,
    destroy: unsafe extern "C" fn(*mut T) -> c_int,
}

impl<T> Initialised<T> {
    fn new(
        init: unsafe extern "C" fn(*mut T) -> c_int,
        destroy: unsafe extern "C" fn(*mut T) -> c_int,
    ) -> io::Result<Self> {
        let mut value = Box::<T>::new_uninit();
        // SAFETY: `init` sets up the value it is given, which lives at a fixed address (boxed)
        // until `destroy` runs in `drop`, and is only used after `init` succeeded.
        check(unsafe { init(value.as_mut_ptr()) })?;
        Ok(Initialised { value, destroy })
    }

    fn as_mut_ptr(&mut self) -> *mut T {
        self.value.as_mut_ptr()
    }

    fn as_ptr(&self) -> *const T {
        self.value.as_ptr()
    }
}

impl<T> Drop for Initialised<T> {
    fn drop(&mut self) {
        // SAFETY: set up by `init` in `new`, destroyed once.
        unsafe { (self.destroy)(self.value.as_mut_ptr()) };
    }
}

/// What the child of [`spawn`] does to its descriptors and working directory before it runs
/// the program, in the order added. Descriptor numbers are only numbers here: one that is not
/// open at spawn time makes the spawn fail, it harms nothing.
pub(crate) struct FileActions(Initialised<libc::posix_spawn_file_actions_t>);

impl FileActions {
    /// No actions.
    pub(crate) fn new() -> io::Result<Self> {
        Initialised::new(
            libc::posix_spawn_file_actions_init,
            libc::posix_spawn_file_actions_destroy,
        )
        .map(Self)
    }

    /// Opens `/dev/null` for reading as descriptor `fd`.
    pub(crate) fn open_dev_null(&mut self, fd: RawFd) -> io::Result<()> {
        // SAFETY: the actions were set up by `new`; the path is a static C string, which glibc
        // copies anyway.
        check(unsafe {
            libc::posix_spawn_file_actions_addopen(
                self.0.as_mut_ptr(),
                fd,
                c"/dev/null".as_ptr(),
                libc::O_RDONLY,
                0,
            )
        })
    }

    /// Copies descriptor `from` onto `to` (which clears close-on-exec on the copy).
    pub(crate) fn dup2(&mut self, from: RawFd, to: RawFd) -> io::Result<()> {
        // SAFETY: the actions were set up by `new`; the descriptors are plain numbers.
        check(unsafe { libc::posix_spawn_file_actions_adddup2(self.0.as_mut_ptr(), from, to) })
    }

    /// Changes to `dir`.
    pub(crate) fn chdir(&mut self, dir: &CStr) -> io::Result<()> {
        // SAFETY: the actions were set up by `new`; glibc copies the path, which is a valid C
        // string for the call.
        check(unsafe {
            libc::posix_spawn_file_actions_addchdir_np(self.0.as_mut_ptr(), dir.as_ptr())
        })
    }

    /// Makes the child's process group the foreground group of terminal `tty`. It runs after
    /// the process group is made, with every signal still blocked: the child takes the
    /// foreground itself before it runs anything.
    pub(crate) fn tcsetpgrp(&mut self, tty: RawFd) -> io::Result<()> {
        // SAFETY: the actions were set up by `new`; the descriptor is a plain number.
        check(unsafe { libc::posix_spawn_file_actions_addtcsetpgrp_np(self.0.as_mut_ptr(), tty) })
    }
}

/// The attributes of a [`spawn`]: its signal mask and defaults, its process group and session.
pub(crate) struct SpawnAttrs(Initialised<libc::posix_spawnattr_t>);

impl SpawnAttrs {
    /// No attributes set (and none of their flags).
    pub(crate) fn new() -> io::Result<Self> {
        Initialised::new(libc::posix_spawnattr_init, libc::posix_spawnattr_destroy).map(Self)
    }

    /// The child's signal mask: empty (`POSIX_SPAWN_SETSIGMASK`).
    pub(crate) fn set_empty_sigmask(&mut self) -> io::Result<()> {
        let none = signal_set(&[])?;
        // SAFETY: the attributes were set up by `new`; the set was set up by `signal_set`
        // and is only read.
        check(unsafe { libc::posix_spawnattr_setsigmask(self.0.as_mut_ptr(), &none) })
    }

    /// The signals set back to their default action in the child (`POSIX_SPAWN_SETSIGDEF`).
    pub(crate) fn set_sigdefault(&mut self, signals: &[c_int]) -> io::Result<()> {
        let reset = signal_set(signals)?;
        // SAFETY: the attributes were set up by `new`; the set was set up by `signal_set`
        // and is only read.
        check(unsafe { libc::posix_spawnattr_setsigdefault(self.0.as_mut_ptr(), &reset) })
    }

    /// The process group the child joins, 0 for one of its own (`POSIX_SPAWN_SETPGROUP`).
    pub(crate) fn set_pgroup(&mut self, pgroup: libc::pid_t) -> io::Result<()> {
        // SAFETY: the attributes were set up by `new`.
        check(unsafe { libc::posix_spawnattr_setpgroup(self.0.as_mut_ptr(), pgroup) })
    }

    /// Which of the attributes apply (`POSIX_SPAWN_*`).
    pub(crate) fn set_flags(&mut self, flags: c_int) -> io::Result<()> {
        let flags = libc::c_short::try_from(flags)
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: the attributes were set up by `new`.
        check(unsafe { libc::posix_spawnattr_setflags(self.0.as_mut_ptr(), flags) })
    }
}

/// A `sigset_t` holding exactly `signals`.
fn signal_set(signals: &[c_int]) -> io::Result<libc::sigset_t> {
    let mut set = MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigemptyset sets up the whole set it is given.
    check_errno(unsafe { libc::sigemptyset(set.as_mut_ptr()) })?;
    for &sig in signals {
        // SAFETY: the set was set up by sigemptyset; a bad signal number is an EINVAL.
        check_errno(unsafe { libc::sigaddset(set.as_mut_ptr(), sig) })?;
    }
    // SAFETY: set up by sigemptyset above.
    Ok(unsafe { set.assume_init() })
}

/// Starts `program` with `argv` (its `argv[0]` first) and exactly `env`, after `actions`, with
/// `attrs`; returns the child's pid. An environment holding a NUL byte is an `InvalidInput`.
pub(crate) fn spawn(
    program: &CStr,
    argv: &[&CStr],
    env: &Environ,
    actions: &FileActions,
    attrs: &SpawnAttrs,
) -> io::Result<libc::pid_t> {
    let (bytes, starts) = env
        .raw()
        .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
    // Every variable must end inside the buffer: the buffer ends in a NUL and every start is
    // within it (what `Environ` builds; checked, so that this function is sound on its own).
    if !starts.is_empty()
        && (bytes.last() != Some(&0) || starts.iter().any(|&at| at >= bytes.len()))
    {
        return Err(io::Error::other("a malformed environment buffer"));
    }
    // `bytes` is not changed while the table is used: the pointers stay valid.
    let envp: Vec<*const c_char> = starts
        .iter()
        .map(|&at| bytes[at..].as_ptr().cast())
        .chain([ptr::null()])
        .collect();
    let argv: Vec<*const c_char> = argv
        .iter()
        .map(|a| a.as_ptr())
        .chain([ptr::null()])
        .collect();
    let mut pid: libc::pid_t = 0;
    // SAFETY: every pointer handed over lives until `posix_spawn` returns: `argv`'s strings,
    // `env`'s buffer and `envp`, and the initialised actions and attributes. The argument and
    // environment arrays end with a null pointer, and each of their strings ends in a NUL
    // (a `CStr`; the environment buffer as checked above). glibc's `posix_spawn` does not write
    // through them despite their `*mut` types.
    let rc = unsafe {
        libc::posix_spawn(
            &mut pid,
            program.as_ptr(),
            actions.0.as_ptr(),
            attrs.0.as_ptr(),
            argv.as_ptr().cast(),
            envp.as_ptr().cast(),
        )
    };
    check(rc)?;
    Ok(pid)
}

/// The kernel's clock ticks a second (`_SC_CLK_TCK`, the unit of `/proc/<pid>/stat`'s times),
/// at least 1.
pub(crate) fn clock_ticks_per_second() -> i64 {
    // SAFETY: sysconf has no preconditions.
    i64::from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as i32).max(1)
}

/// A signal blocked in the calling thread until this is dropped, when the thread's mask is put
/// back as it was. Not `Send`: the mask is the thread's.
pub(crate) struct Blocked {
    old: libc::sigset_t,
    _thread: PhantomData<*const ()>,
}

/// Blocks `sig` in the calling thread (`pthread_sigmask`) while the guard lives.
pub(crate) fn block_signal(sig: c_int) -> io::Result<Blocked> {
    let block = signal_set(&[sig])?;
    let mut old = MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: `block` is a set up set, only read; pthread_sigmask only changes this thread's
    // mask and writes the old one into `old`.
    check(unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &block, old.as_mut_ptr()) })?;
    Ok(Blocked {
        // SAFETY: written by the successful call above.
        old: unsafe { old.assume_init() },
        _thread: PhantomData,
    })
}

impl Drop for Blocked {
    fn drop(&mut self) {
        // SAFETY: `old` is the mask `block_signal` read in this same thread (the guard is not
        // `Send`); no old mask is asked for.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, ptr::null_mut()) };
    }
}

/// Takes a POSIX record lock (`fcntl(F_SETLK)`, a write lock) on the whole of `file`, without
/// waiting: `Ok(false)` when another process holds it. A record lock belongs to the process
/// and is not shared with the children it forks.
pub(crate) fn lock_record(file: &File) -> io::Result<bool> {
    // SAFETY: a zeroed `flock` is valid plain data; the fields that matter are set below.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_WRLCK as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    // SAFETY: `fl` outlives the call; F_SETLK only reads it; the descriptor is `file`'s, open.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &fl) };
    if rc == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN) | Some(libc::EACCES) => Ok(false),
        _ => Err(e),
    }
}

/// Makes the child `cmd` starts get SIGKILL when hookq dies (`PR_SET_PDEATHSIG`), and not
/// start at all when hookq died between the fork and that setting.
pub(crate) fn die_with_parent(cmd: &mut std::process::Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs between fork and exec, where only async-signal-safe calls are
    // allowed: prctl and getppid are, and it allocates nothing (the error is a raw OS one).
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // hookq died between the fork and the line above: no signal will come.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Sets signal `sig` back to its default action.
pub(crate) fn set_default(sig: c_int) -> io::Result<()> {
    // SAFETY: SIG_DFL installs no handler; signal() has no other precondition.
    if unsafe { libc::signal(sig, libc::SIG_DFL) } == libc::SIG_ERR {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether signal `sig` is ignored now.
pub(crate) fn is_ignored(sig: c_int) -> bool {
    let mut now = MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: with no new action, `sigaction` only writes the current one into `now`, which is
    // zeroed, a valid `sigaction`, either way.
    let rc = unsafe { libc::sigaction(sig, ptr::null(), now.as_mut_ptr()) };
    // SAFETY: zeroed or written by the call, a valid `sigaction` either way.
    rc == 0 && unsafe { now.assume_init() }.sa_sigaction == libc::SIG_IGN
}

/// Installs `handler` for `sig`, restarting the system calls it interrupts.
fn install(sig: c_int, handler: extern "C" fn(c_int)) -> io::Result<()> {
    // SAFETY: a zeroed `sigaction` is valid plain data: no flags and an empty mask.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = handler as libc::sighandler_t;
    action.sa_flags = libc::SA_RESTART;
    // SAFETY: `action` is a valid `sigaction`, only read; the handler is async-signal-safe
    // (both handlers below touch only atomics); no old action is asked for.
    check_errno(unsafe { libc::sigaction(sig, &action, ptr::null_mut()) })
}

extern "C" fn do_nothing(_: c_int) {}

/// Catches `sig` with a handler that does nothing: a system call it interrupts is restarted or
/// fails (a write past the file-size limit with `EFBIG` instead of the process killed).
pub(crate) fn catch_and_ignore(sig: c_int) -> io::Result<()> {
    install(sig, do_nothing)
}

/// The [`Stop`] each signal number requests, if any (Linux numbers signals 1 to 64).
static STOPS: [AtomicPtr<Stop>; 65] = [const { AtomicPtr::new(ptr::null_mut()) }; 65];

extern "C" fn request_stop(sig: c_int) {
    let Some(slot) = usize::try_from(sig).ok().and_then(|i| STOPS.get(i)) else {
        return;
    };
    let stop = slot.load(Ordering::Acquire);
    // SAFETY: only `stop_on` stores here, and only pointers made from a `&'static Stop`: null
    // or valid for ever. `Stop::request` is an atomic update, async-signal-safe.
    if let Some(stop) = unsafe { stop.as_ref() } {
        stop.request();
    }
}

/// Makes signal `sig` call [`Stop::request`] on `stop` (a later call for the same signal
/// replaces the `Stop`).
pub(crate) fn stop_on(sig: c_int, stop: &'static Stop) -> io::Result<()> {
    let slot = usize::try_from(sig)
        .ok()
        .and_then(|i| STOPS.get(i))
        .filter(|_| sig > 0)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
    slot.store(ptr::from_ref(stop).cast_mut(), Ordering::Release);
    install(sig, request_stop)
}

/// A new pseudo-terminal: its controlling side and the terminal side a child is given.
#[cfg(test)]
pub(crate) fn open_pty() -> io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use std::os::fd::FromRawFd;
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty writes two descriptors into the given ints; the other arguments may be
    // null.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            ptr::null_mut(),
            ptr::null(),
            ptr::null(),
        )
    };
    check_errno(rc)?;
    // SAFETY: both descriptors were just opened and are owned here alone.
    Ok(unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(master),
            std::os::fd::OwnedFd::from_raw_fd(slave),
        )
    })
}

/// Makes the child `cmd` starts lead a new session whose controlling terminal is its stdin.
#[cfg(test)]
pub(crate) fn on_exec_take_terminal(cmd: &mut std::process::Command) {
    // SAFETY: the closure runs between fork and exec: setsid and ioctl are async-signal-safe,
    // and it allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
