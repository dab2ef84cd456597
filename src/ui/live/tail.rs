//! `GET /task/{id}/log/{file}/tail?from=N&style=S`: what a hook appends to its log, rendered
//! as the log page renders it, as Server-Sent Events.

use std::convert::Infallible;
use std::io::SeekFrom;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncSeekExt};
use tokio::sync::watch;

use crate::queue::ids::TaskId;
use crate::queue::logs::task_logs;

use super::super::ansi::{self, Style};
use super::Live;
use super::events::{KEEP_ALIVE, RETRY, UNBUFFERED};

/// How often the log's size is looked at.
pub const TICK: Duration = Duration::from_millis(250);
/// The most bytes one event carries: more than the longest escape sequence the renderer keeps
/// whole ([`ansi::ESCAPE_MAX`]), so that every read shows something.
const CHUNK: u64 = 64 * 1024;

/// `?from=N&style=S`: the byte the page's text ends at, and the style in effect there, as its
/// classes.
#[derive(Debug, Deserialize)]
pub(super) struct From {
    from: Option<u64>,
    style: Option<String>,
}

/// Where one tail stream stands.
struct Tail {
    path: PathBuf,
    offset: u64,
    /// The file's inode when last read: another one at the path (a log rotated by moving it
    /// away) is read from its start.
    inode: Option<u64>,
    /// The style in effect at `offset`.
    style: Style,
    /// The file was missing at the last look: a log rotated by moving it away is missing for a
    /// moment, a pruned one for good.
    missing: bool,
    /// The file went (pruned): the stream has said so and ends.
    gone: bool,
    /// The watcher's channel, only to end with the view.
    stop: watch::Receiver<u64>,
}

/// The tail of one of the task's logs, found by its name among the ones the task has: the
/// request's text never becomes a path. 404 for an invalid task id or a name not listed.
pub(super) async fn tail(
    State(live): State<Arc<Live>>,
    Path((id, file)): Path<(String, String)>,
    Query(query): Query<From>,
    headers: HeaderMap,
) -> Response {
    let Ok(task) = TaskId::new(id) else {
        return (StatusCode::NOT_FOUND, "no such task").into_response();
    };
    let ws = live.workspace().clone();
    let listed = tokio::task::spawn_blocking(move || task_logs(&ws, &task, None)).await;
    let Some(log) = listed
        .ok()
        .and_then(Result::ok)
        .and_then(|logs| logs.into_iter().find(|l| l.name() == file))
    else {
        return (StatusCode::NOT_FOUND, "no such log").into_response();
    };
    let Some(style) = Style::parse(query.style.as_deref().unwrap_or("")) else {
        return (StatusCode::BAD_REQUEST, "no such style").into_response();
    };
    // A browser connecting again says where the last event it got ended.
    let resumed = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(position);
    let (offset, style) = resumed.unwrap_or((query.from.unwrap_or(0), style));
    let state = Tail {
        path: log.path,
        offset,
        inode: None,
        style,
        missing: false,
        gone: false,
        stop: live.shared.subscribe(),
    };
    let events = stream::unfold(state, |mut t| async move {
        let event = t.next().await?;
        Some((Ok::<_, Infallible>(event.retry(RETRY)), t))
    });
    (
        [UNBUFFERED],
        Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)),
    )
        .into_response()
}

/// An event's id, `N` or `N S`: the byte its text ends at, and the style in effect there (its
/// classes) when there is one.
fn position(id: &str) -> Option<(u64, Style)> {
    let (offset, classes) = id.split_once(' ').unwrap_or((id, ""));
    Some((offset.parse().ok()?, Style::parse(classes)?))
}

impl Tail {
    /// The next event: text appended, or the file emptied; `None` once the view stops.
    async fn next(&mut self) -> Option<Event> {
        if self.gone {
            return None;
        }
        loop {
            if let Some(event) = self.look().await {
                return Some(event);
            }
            tokio::select! {
                () = tokio::time::sleep(TICK) => {}
                changed = self.stop.changed() => changed.ok()?,
            }
        }
    }

    /// What the file holds past the offset now, if anything.
    async fn look(&mut self) -> Option<Event> {
        let meta = match tokio::fs::metadata(&self.path).await {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !self.missing => {
                self.missing = true;
                return None;
            }
            // Still missing a tick later: pruned (a pass removed the task's logs). Said once,
            // and the stream ends.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.gone = true;
                return Some(
                    Event::default()
                        .event("pruned")
                        .data("pruned: this log is gone; the task's history still lists its runs"),
                );
            }
            Err(_) => return None,
        };
        self.missing = false;
        let len = meta.len();
        let replaced = self.inode.replace(meta.ino()).is_some_and(|i| i != meta.ino());
        if len < self.offset || replaced {
            self.offset = 0;
            self.style = Style::default();
            // With data: a browser drops an event without any.
            return Some(Event::default().event("reset").data("0").id("0"));
        }
        while len > self.offset {
            let mut file = tokio::fs::File::open(&self.path).await.ok()?;
            file.seek(SeekFrom::Start(self.offset)).await.ok()?;
            let mut bytes = Vec::new();
            let read = file
                .take((len - self.offset).min(CHUNK))
                .read_to_end(&mut bytes)
                .await
                .ok()?;
            if read == 0 {
                return None;
            }
            let shown = ansi::render(&bytes, self.style);
            self.offset += shown.used as u64;
            self.style = shown.style;
            if !shown.html.is_empty() {
                let class = self.style.class();
                let id = if class.is_empty() {
                    self.offset.to_string()
                } else {
                    format!("{} {class}", self.offset)
                };
                return Some(Event::default().event("append").data(shown.html).id(id));
            }
            if shown.used < read {
                // An incomplete end, shown once the hook has written the rest of it.
                return None;
            }
        }
        None
    }
}
