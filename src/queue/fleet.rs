//! Many workspaces' queues drained by one process: a hub ([`run_queue`]) per workspace, each on
//! a thread of its own with its own config, hooks, runner lock and per-task order, SQLite and
//! PostgreSQL mixed, and one set of job [`Slots`] shared by all their drainers, so that at most
//! [`FleetOptions::jobs`] points run at once in the process and one busy queue cannot starve
//! the others.
//!
//! The workspaces are a list, or a listing file read again when it changes: a new line attaches
//! a workspace, a removed one stops its hub after its running command. A workspace whose hub
//! fails (its config or database unusable) is reported and tried again with backoff while the
//! others drain.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use crate::exec::Stop;
use crate::queue::config::FileVersion;
use crate::queue::drain::{DrainEvent, Drainer, PassReport, Slots};
use crate::queue::error::Error;
use crate::queue::hub::{HubEvent, HubOptions, run_queue};
use crate::queue::model::Outcome;
use crate::queue::options::Options;
use crate::queue::phase::Point;
use crate::queue::workspace::Workspace;

/// How often the loop that supervises the hubs wakes when nothing is said, to pass a stop
/// request on to them.
const TICK: Duration = Duration::from_millis(50);

/// The workspaces a fleet drains.
#[derive(Debug, Clone)]
pub enum Listing {
    /// These directories (each one, or a directory below it, holds a workspace, found as
    /// `hookq -C DIR` finds it).
    Dirs(Vec<PathBuf>),
    /// The directories a file lists, one a line ([`parse_listing`]), read again whenever the
    /// file changes.
    File(PathBuf),
}

impl Listing {
    /// The directories listed now, each once: a file's lines read again.
    pub fn dirs(&self) -> Result<Vec<PathBuf>, ListingError> {
        self.read()
    }

    /// The listing file, when the directories are a file's.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Listing::File(path) => Some(path),
            Listing::Dirs(_) => None,
        }
    }

    /// The directories listed now.
    fn read(&self) -> Result<Vec<PathBuf>, ListingError> {
        match self {
            Listing::Dirs(dirs) => Ok(dedup(dirs.clone())),
            Listing::File(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| ListingError {
                    path: path.clone(),
                    source,
                })?;
                let base = path.parent().unwrap_or(Path::new("."));
                Ok(parse_listing(&text, base))
            }
        }
    }
}

/// The directories a listing file's `text` names, in order, each once: one a line, blank
/// lines and lines starting with `#` ignored, surrounding spaces trimmed, a relative path
/// taken from `base` (the file's own directory).
pub fn parse_listing(text: &str, base: &Path) -> Vec<PathBuf> {
    let dirs = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| base.join(l))
        .collect();
    dedup(dirs)
}

/// `dirs` without repeats, in order.
fn dedup(dirs: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut seen = std::collections::HashSet::new();
    dirs.into_iter().filter(|d| seen.insert(d.clone())).collect()
}

/// A listing file that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the workspace listing {}: {source}", path.display())]
pub struct ListingError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: std::io::Error,
}

/// A fleet's settings.
#[derive(Debug, Clone, Copy)]
pub struct FleetOptions {
    /// The most points running at once across every queue; each queue's drainer runs up to as
    /// many of its own, points of different tasks.
    pub jobs: usize,
    /// Each queue's hub settings.
    pub hub: HubOptions,
    /// The first wait before a failed workspace's hub starts again; each next one is twice as
    /// long, from the first again once it attached.
    pub retry_first: Duration,
    /// The longest wait before a failed workspace's hub starts again.
    pub retry_max: Duration,
    /// How often a listing file is looked at for a change.
    pub reread: Duration,
}

impl Default for FleetOptions {
    fn default() -> Self {
        Self {
            jobs: 1,
            hub: HubOptions::default(),
            retry_first: Duration::from_secs(1),
            retry_max: Duration::from_secs(60),
            reread: Duration::from_secs(1),
        }
    }
}

/// What a fleet reports as it runs.
#[derive(Debug)]
pub enum FleetEvent {
    /// What happened to one workspace's queue.
    Queue {
        /// The workspace's directory, as listed.
        workspace: PathBuf,
        /// What happened.
        event: QueueEvent,
    },
    /// Every listed workspace is attached ([`HubEvent::Attached`]): said once for a listing,
    /// and again once a changed listing is attached in full.
    Ready {
        /// How many queues are attached.
        queues: usize,
    },
    /// The listing file could not be read again: the workspaces listed before go on. Said
    /// once, until the file is read again.
    ListingFailed(ListingError),
}

/// What happened to one queue of a fleet.
#[derive(Debug)]
pub enum QueueEvent {
    /// What its hub reports.
    Hub(HubEvent),
    /// A `warning:` line of its drain (or its config's near-miss keys, as it attaches).
    Warning(String),
    /// A hook command ran to its end ([`DrainEvent::Command`]).
    Command {
        /// The point whose command it is.
        point: Point,
        /// How it ended.
        outcome: Outcome,
        /// How long it ran.
        duration: Duration,
    },
    /// A pass ended: what it did, `None` when it failed ([`DrainEvent::Pass`]).
    Pass(Option<PassReport>),
    /// Its hub ended with an error (the workspace or its database cannot be used); it starts
    /// again after `retry_in` while the other queues go on.
    Failed {
        /// Why.
        error: Error,
        /// When it starts again.
        retry_in: Duration,
    },
    /// Its line left the listing and its hub stopped (after its running command).
    Detached,
}

/// What a queue's thread tells the fleet.
enum Said {
    Queue(usize, QueueEvent),
    Ended(usize),
}

/// One queue's hub, as the fleet keeps it.
struct Member {
    dir: PathBuf,
    stop: Arc<Stop>,
    attached: bool,
    /// Its line left the listing: it is stopping.
    retiring: bool,
}

/// Runs a hub for each workspace of `listing` until `stop` is requested (a first request lets
/// each running command finish; a second kills them), all sharing `fleet.jobs` job slots, and
/// follows a listing file's changes. Each hub is [`run_queue`] on `options` and its
/// workspace's config; what happens is told to `on_event`, on this thread. It ends with an
/// error only when the listing file cannot be read as it starts; a workspace that fails is
/// [`QueueEvent::Failed`], and tried again.
pub fn run(
    listing: &Listing,
    options: &Options,
    fleet: FleetOptions,
    stop: &Stop,
    on_event: &mut dyn FnMut(FleetEvent),
) -> Result<(), ListingError> {
    let file = match listing {
        Listing::File(path) => Some(path.as_path()),
        Listing::Dirs(_) => None,
    };
    let mut version = file.and_then(FileVersion::of);
    let mut listed = listing.read()?;
    let mut looked = Instant::now();
    let mut listing_failed = false;
    // Bumped on each change of the listing, for which readiness is said again.
    let (mut generation, mut ready_said) = (0u64, None);
    let slots = Arc::new(Slots::new(fleet.jobs));
    let (tx, rx) = mpsc::channel::<Said>();
    let mut members: HashMap<usize, Member> = HashMap::new();
    let mut next_id = 0usize;
    // The listing or the members changed since they were last matched.
    let mut changed = true;
    std::thread::scope(|scope| {
        loop {
            // A hub whose stop is requested here is rung below, so that one waiting on a
            // PostgreSQL listener looks at it at once.
            let mut requested = false;
            for m in members.values() {
                requested |= catch_up(&m.stop, stop);
            }
            if stop.graceful() {
                if members.is_empty() {
                    return Ok(());
                }
            } else {
                if let Some(path) = file
                    && looked.elapsed() >= fleet.reread
                {
                    looked = Instant::now();
                    let now = FileVersion::of(path);
                    if now != version || listing_failed {
                        match listing.read() {
                            Ok(dirs) => {
                                version = now;
                                listing_failed = false;
                                if dirs != listed {
                                    listed = dirs;
                                    generation += 1;
                                    changed = true;
                                }
                            }
                            Err(e) => {
                                if !std::mem::replace(&mut listing_failed, true) {
                                    on_event(FleetEvent::ListingFailed(e));
                                }
                            }
                        }
                    }
                }
                // Matched only when the listing or the members changed: a loop over a
                // thousand workspaces must not compare them all on every tick.
                if std::mem::take(&mut changed) {
                    let wanted: HashSet<&PathBuf> = listed.iter().collect();
                    for m in members.values_mut() {
                        if !m.retiring && !wanted.contains(&m.dir) {
                            m.retiring = true;
                            m.stop.request();
                            requested = true;
                        }
                    }
                    let served: HashSet<&PathBuf> = members
                        .values()
                        .filter(|m| !m.retiring)
                        .map(|m| &m.dir)
                        .collect();
                    let unserved: Vec<PathBuf> = listed
                        .iter()
                        .filter(|d| !served.contains(d))
                        .cloned()
                        .collect();
                    for dir in unserved {
                        let (id, member_stop) = (next_id, Arc::new(Stop::new()));
                        next_id += 1;
                        members.insert(
                            id,
                            Member {
                                dir: dir.clone(),
                                stop: Arc::clone(&member_stop),
                                attached: false,
                                retiring: false,
                            },
                        );
                        let (tx, slots) = (tx.clone(), Arc::clone(&slots));
                        let fleet = &fleet;
                        scope.spawn(move || {
                            serve(id, &dir, options, fleet, slots, &member_stop, &tx);
                            let _ = tx.send(Said::Ended(id));
                        });
                    }
                    let attached: HashSet<&PathBuf> = members
                        .values()
                        .filter(|m| !m.retiring && m.attached)
                        .map(|m| &m.dir)
                        .collect();
                    if ready_said != Some(generation) && listed.iter().all(|d| attached.contains(d)) {
                        ready_said = Some(generation);
                        on_event(FleetEvent::Ready {
                            queues: listed.len(),
                        });
                    }
                }
            }
            if requested {
                crate::queue::watch::ring();
            }
            match rx.recv_timeout(TICK) {
                Ok(Said::Queue(id, event)) => {
                    let Some(m) = members.get_mut(&id) else {
                        continue;
                    };
                    if let QueueEvent::Hub(HubEvent::Attached) = event {
                        m.attached = true;
                        changed = true;
                    }
                    on_event(FleetEvent::Queue {
                        workspace: m.dir.clone(),
                        event,
                    });
                }
                Ok(Said::Ended(id)) => {
                    changed = true;
                    if let Some(m) = members.remove(&id)
                        && m.retiring
                    {
                        on_event(FleetEvent::Queue {
                            workspace: m.dir,
                            event: QueueEvent::Detached,
                        });
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => unreachable!("the fleet holds a sender"),
            }
        }
    })
}

/// Raises `local` to the stop `global` asks for (a first request lets each queue's running
/// command finish, a second kills it); whether it requested anything.
fn catch_up(local: &Stop, global: &Stop) -> bool {
    let mut requested = false;
    while local.counter().load(Ordering::SeqCst) < global.counter().load(Ordering::SeqCst) {
        local.request();
        requested = true;
    }
    requested
}

/// One workspace's part of a fleet, on a thread of its own: its hub until `stop`, started
/// again with backoff after each failure.
fn serve(
    id: usize,
    dir: &Path,
    options: &Options,
    fleet: &FleetOptions,
    slots: Arc<Slots>,
    stop: &Stop,
    tx: &Sender<Said>,
) {
    let send = |event| {
        let _ = tx.send(Said::Queue(id, event));
    };
    let mut backoff = fleet.retry_first;
    while !stop.graceful() {
        let mut attached = false;
        let error = match attach(id, dir, options, fleet, &slots, stop, tx, &mut attached) {
            Ok(()) => return,
            Err(e) => e,
        };
        if attached {
            backoff = fleet.retry_first;
        }
        send(QueueEvent::Failed {
            error,
            retry_in: backoff,
        });
        let until = Instant::now() + backoff;
        while Instant::now() < until && !stop.graceful() {
            std::thread::sleep(TICK);
        }
        backoff = (backoff * 2).min(fleet.retry_max);
    }
}

/// Finds the workspace in `dir` and runs its hub until `stop`, its drainer taking its job
/// slots from `slots`; sets `attached` once the hub attached.
#[allow(clippy::too_many_arguments)]
fn attach(
    id: usize,
    dir: &Path,
    options: &Options,
    fleet: &FleetOptions,
    slots: &Arc<Slots>,
    stop: &Stop,
    tx: &Sender<Said>,
    attached: &mut bool,
) -> Result<(), Error> {
    let ws = Workspace::discover(dir)?;
    let send = |event| {
        let _ = tx.send(Said::Queue(id, event));
    };
    let warned = tx.clone();
    let observed = tx.clone();
    let mut drainer = Drainer::with_warnings(ws.clone(), stop, move |line| {
        let _ = warned.send(Said::Queue(id, QueueEvent::Warning(line.to_owned())));
    })
    .jobs(fleet.jobs)
    .slots(Arc::clone(slots))
    .observe(move |event| {
        let event = match event {
            DrainEvent::Command {
                point,
                outcome,
                duration,
            } => QueueEvent::Command {
                point,
                outcome,
                duration,
            },
            DrainEvent::Pass(passed) => QueueEvent::Pass(passed.ok().cloned()),
        };
        let _ = observed.send(Said::Queue(id, event));
    });
    if let Ok(cfg) = drainer.config() {
        for w in cfg.warnings() {
            send(QueueEvent::Warning(format!("warning: {w}")));
        }
    }
    run_queue(&ws, options, &mut drainer, stop, fleet.hub, &mut |event| {
        if let HubEvent::Attached = event {
            *attached = true;
        }
        send(QueueEvent::Hub(event));
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_names_directories_from_its_own() {
        let text = "# the hub's queues\n\n  a  \n/abs/b\n# c\na\nsub/d\n";
        assert_eq!(
            parse_listing(text, Path::new("/etc/hookq")),
            [
                PathBuf::from("/etc/hookq/a"),
                PathBuf::from("/abs/b"),
                PathBuf::from("/etc/hookq/sub/d"),
            ]
        );
    }

    #[test]
    fn a_local_stop_catches_up_with_the_global_one() {
        let (local, global) = (Stop::new(), Stop::new());
        catch_up(&local, &global);
        assert!(!local.graceful());
        global.request();
        global.request();
        catch_up(&local, &global);
        assert!(local.immediate());
    }
}
