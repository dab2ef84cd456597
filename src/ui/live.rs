//! Live updates of the web view: one watcher per server tells every open page when the queue
//! changed, and a log page is sent what its hook appends.
//!
//! [`Live::start`] spawns the watcher's thread; the watcher reads a small mark of the queue a
//! few times a second, on a connection of its own on SQLite and through the process's one
//! listener of the server on PostgreSQL (see [`crate::queue::watch`] for what it reads) and bumps a [`generation`](Live::generation) when the mark moves. [`routes`]
//! serves:
//!
//! - `GET /events`: Server-Sent Events. First `event: hello` with the current generation,
//!   then `event: change` with the new one whenever the watcher sees a change, and keep-alive
//!   comments. Every stream waits on the same channel the watcher feeds: however many pages
//!   are open, the database is read as often as for one ([`Live::reads`]).
//! - `GET /task/{id}/log/{file}/tail?from=N&style=S`: Server-Sent Events of what is appended
//!   to one of the task's hook logs from byte `N`, in the style whose classes are `S` (the log
//!   page's `data-offset` and `data-style`; or the `Last-Event-ID` a reconnecting browser
//!   sends): `event: append` with the text as HTML, rendered as the log page renders it (the
//!   same renderer, so a page and its tail show the same text in the same colours), and as its
//!   id the offset it reaches and the style in effect there (`N` or `N S`), a UTF-8 character
//!   or escape sequence the hook has not finished writing held back for the next event;
//!   `event: reset` when the file was emptied or replaced (then its text follows from its
//!   start). `{file}` must be a name [`task_logs`](crate::queue::logs::task_logs) lists for the
//!   task, else 404; an `S` that is not a style's classes is 400.
//! - `GET /assets/live.js`: the page script that uses both.

mod events;
mod tail;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use axum::Router;
use axum::http::header;
use axum::routing::get;
use tokio::sync::watch as channel;

use crate::queue::error::Error as QueueError;
use crate::queue::options::Options;
use crate::queue::watch::{Pause, Watcher};
use crate::queue::workspace::Workspace;

/// The page script: live updates of `#main` and tailed logs.
pub const LIVE_JS: &str = include_str!("assets/live.js");

/// What can keep the live view from starting.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The queue's database cannot be opened or read.
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// The watcher's thread cannot be started.
    #[error("cannot start the live view's watcher: {0}")]
    Spawn(#[source] std::io::Error),
}

/// The live view of one server: its watcher, and the channel that tells every open page.
pub struct Live {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// What the watcher's thread and the request handlers share.
pub(crate) struct Shared {
    ws: Workspace,
    generation: AtomicU64,
    reads: Arc<AtomicU64>,
    stopped: Mutex<bool>,
    wake: Condvar,
    /// Fed by the watcher; taken (closing every stream) on stop.
    sender: Mutex<Option<channel::Sender<u64>>>,
    /// What each new stream subscribes through.
    receiver: channel::Receiver<u64>,
    /// Told of each change too: a view of many queues keeps its list current through them.
    followers: Mutex<Vec<Box<dyn Fn() + Send + Sync>>>,
}

impl Pause for Shared {
    fn sleep(&self, d: Duration) {
        let stopped = self.stopped.lock().unwrap_or_else(PoisonError::into_inner);
        // A spurious wake-up sleeps on: the watcher reads once a poll, never more often.
        drop(
            self.wake
                .wait_timeout_while(stopped, d, |stopped| !*stopped)
                .unwrap_or_else(PoisonError::into_inner),
        );
    }

    fn stopped(&self) -> bool {
        *self.stopped.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Shared {

    fn bump(&self) {
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(tx) = &*self.sender.lock().unwrap_or_else(PoisonError::into_inner) {
            tx.send_replace(generation);
        }
        for follow in &*self.followers.lock().unwrap_or_else(PoisonError::into_inner) {
            follow();
        }
    }

    /// A receiver of the generations to come; closed once the view stops.
    pub(crate) fn subscribe(&self) -> channel::Receiver<u64> {
        self.receiver.clone()
    }
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("root", &self.shared.ws.root())
            .field("generation", &self.generation())
            .finish_non_exhaustive()
    }
}

impl Live {
    /// Opens the queue `ws` names (its SQLite file, or the PostgreSQL queue `HOOKQ_DATABASE_URL`
    /// or its config names) for the watcher, creating the database or schema as a runner
    /// would, and starts the watcher's thread. Fails when the database cannot be opened, or the
    /// environment's options are invalid ([`Options::from_env`]); a read that fails later is
    /// logged once and retried every second.
    pub fn start(ws: Workspace) -> Result<Arc<Live>, LiveError> {
        let watcher = crate::queue::Queue::open_with(&ws, Options::from_env()?)?.watcher()?;
        Live::watching(ws, watcher)
    }

    /// Starts the thread that steps `watcher`, the one a host's queue of `ws` hands out
    /// ([`Queue::watcher`](crate::queue::Queue::watcher)), so that the view watches the very
    /// database the host opened.
    pub fn watching(ws: Workspace, mut watcher: Watcher) -> Result<Arc<Live>, LiveError> {
        let (tx, rx) = channel::channel(0);
        let shared = Arc::new(Shared {
            ws: ws.clone(),
            generation: AtomicU64::new(0),
            reads: watcher.reads(),
            stopped: Mutex::new(false),
            wake: Condvar::new(),
            sender: Mutex::new(Some(tx)),
            receiver: rx,
            followers: Mutex::new(Vec::new()),
        });
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("hookq-ui-watch".into())
            .spawn(move || {
                while !theirs.stopped() {
                    if watcher.step(&*theirs) && !theirs.stopped() {
                        theirs.bump();
                    }
                }
            })
            .map_err(LiveError::Spawn)?;
        Ok(Arc::new(Live {
            shared,
            thread: Mutex::new(Some(thread)),
        }))
    }

    /// How many changes the watcher has seen: a page rendered at one generation is current
    /// until the next.
    pub fn generation(&self) -> u64 {
        self.shared.generation.load(Ordering::SeqCst)
    }

    /// How many times the watcher has read the database, however many pages listen.
    pub fn reads(&self) -> u64 {
        self.shared.reads.load(Ordering::Relaxed)
    }

    /// Calls `follow` on the watcher's thread each time it sees a change, after the pages
    /// heard of it.
    pub(crate) fn follow(&self, follow: Box<dyn Fn() + Send + Sync>) {
        self.shared
            .followers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(follow);
    }

    /// The workspace watched.
    pub fn workspace(&self) -> &Workspace {
        &self.shared.ws
    }

    /// Ends the watcher (closing its connection) and every event and tail stream, so that a
    /// server shutting down gracefully is not held open by its pages. Waits for the watcher's
    /// thread, at most a second (how often it looks at the stop while it waits).
    /// Also done when the last [`Arc`] of the view is dropped.
    pub fn stop(&self) {
        *self
            .shared
            .stopped
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = true;
        self.shared.wake.notify_all();
        crate::queue::watch::ring();
        drop(
            self.shared
                .sender
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(thread) = thread
            && thread.join().is_err()
        {
            tracing::warn!("the live view's watcher panicked");
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The live view's routes, to merge into the pages' router: `/events`, a log's `/tail` and
/// `/assets/live.js` (see the module's documentation).
pub fn routes(live: Arc<Live>) -> Router {
    Router::new()
        .route("/events", get(events::events))
        .route("/task/{id}/log/{file}/tail", get(tail::tail))
        .route("/assets/live.js", get(script))
        .with_state(live)
}

/// `/events` of `generations` and `/assets/live.js`: the live updates of a page that is not
/// one queue's (the list of a view of many).
pub(crate) fn list_routes<S: Clone + Send + Sync + 'static>(
    generations: channel::Receiver<u64>,
) -> Router<S> {
    Router::new()
        .route(
            "/events",
            get(move || events::stream(generations.clone())),
        )
        .route("/assets/live.js", get(script))
}

async fn script() -> impl axum::response::IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        LIVE_JS,
    )
}
