//! The list of a view of many queues (`/`, `/api/queues`), their `/metrics` labelled by queue,
//! and each request under `q/<slug>/` handed to that queue's own router.

use askama::Template;
use axum::Json;
use axum::extract::{OriginalUri, Request, State};
use axum::http::{StatusCode, Uri, header};
use axum::response::{Html, IntoResponse, Response};
use serde::Serialize;

use crate::queue::model::now_ms;
use crate::queue::{LockState, Queue};

use super::app;
use super::error::UiError;
use super::fleet::{Fleet, Opened};
use super::fmt;

/// Failed runs counted on the list: those of the last hour.
const FAILURES_SINCE_MS: i64 = 60 * 60 * 1000;
/// The outcomes the list counts as failures: a command that ran and did not succeed.
const FAILURES: [&str; 4] = ["failed", "timed_out", "signalled", "spawn_failed"];

/// One queue of the list, as the page shows it and `/api/queues` serves it.
#[derive(Debug, Serialize)]
pub(crate) struct QueueRow {
    /// Its workspace's directory, as listed: the name `/metrics` labels it with.
    pub(crate) workspace: String,
    /// Its part of the view's URLs: its pages are under `q/<slug>/`.
    pub(crate) slug: String,
    /// Its pages' root, relative to the list's.
    pub(crate) url: String,
    /// Its database, as its pages name it; `None` when it cannot be opened.
    pub(crate) place: Option<String>,
    /// `sqlite` or `postgres`; `None` when it cannot be opened.
    pub(crate) backend: Option<&'static str>,
    /// Whether it is open and its watcher keeps its pages and this row current.
    pub(crate) live: bool,
    /// What was read of it, `None` when it could not be read.
    pub(crate) summary: Option<Summary>,
    /// Why it cannot be opened or read.
    pub(crate) error: Option<String>,
}

/// What the list shows of a queue.
#[derive(Debug, Serialize)]
pub(crate) struct Summary {
    pub(crate) pending: i64,
    /// When the oldest pending point was recorded, unix ms.
    pub(crate) oldest_pending_ms: Option<i64>,
    pub(crate) paused: bool,
    pub(crate) paused_since_ms: Option<i64>,
    /// Its runner lock: whether it is held, and by whom.
    pub(crate) lock: LockState,
    /// Runs that failed, timed out, were signalled or could not be started, in the last hour.
    pub(crate) failures_last_hour: i64,
}

fn summary(db: &mut Queue, now: i64) -> Result<Summary, UiError> {
    let stats = db.stats()?;
    let lock = db.lock()?;
    let failures_last_hour = db
        .outcomes(now - FAILURES_SINCE_MS, FAILURES_SINCE_MS)?
        .iter()
        .filter(|c| FAILURES.contains(&c.outcome.as_str()))
        .map(|c| c.count)
        .sum();
    Ok(Summary {
        pending: stats.pending,
        oldest_pending_ms: stats.oldest_recorded_ms,
        paused: stats.paused_since_ms.is_some(),
        paused_since_ms: stats.paused_since_ms,
        lock,
        failures_last_hour,
    })
}

/// Every queue's row, read at the same time.
async fn rows(fleet: &Fleet, now: i64) -> Vec<QueueRow> {
    let reads: Vec<_> = fleet
        .members()
        .into_iter()
        .map(|m| {
            tokio::spawn(async move {
                let mut row = QueueRow {
                    url: format!("q/{}/", m.slug),
                    workspace: m.name,
                    slug: m.slug,
                    place: None,
                    backend: None,
                    live: false,
                    summary: None,
                    error: None,
                };
                match m.state {
                    Opened::Open { ui, .. } => {
                        let app = ui.app();
                        row.place = Some(app.place().to_owned());
                        row.backend = Some(if app.is_postgres() { "postgres" } else { "sqlite" });
                        match app.db().call(move |db| summary(db, now)).await {
                            Ok(s) => {
                                row.summary = Some(s);
                                row.live = true;
                            }
                            Err(e) => row.error = Some(e.to_string()),
                        }
                    }
                    Opened::Failed(e) => row.error = Some(e),
                }
                row
            })
        })
        .collect();
    let mut rows = Vec::with_capacity(reads.len());
    for read in reads {
        match read.await {
            Ok(row) => rows.push(row),
            Err(e) => tracing::warn!("hookq ui: a queue's row was lost: {e}"),
        }
    }
    rows
}

#[derive(Template)]
#[template(path = "queues.html", config = "src/ui/askama.toml")]
struct QueuesPage {
    base: String,
    root: String,
    generation: u64,
    rows: Vec<QueueRow>,
    listing_error: Option<String>,
    now: i64,
}

/// `/`: every queue, its pending points, oldest, pause, lock and last hour's failures.
pub(crate) async fn page(State(fleet): State<Fleet>, req: Request) -> Response {
    // Before the reads: a change after it reaches the page.
    let generation = fleet.generation();
    let outer = req
        .extensions()
        .get::<OriginalUri>()
        .map_or_else(|| req.uri().clone(), |o| o.0.clone());
    let (base, root) = app::links(outer.path(), req.uri().path());
    let now = now_ms();
    let page = QueuesPage {
        base,
        root,
        generation,
        rows: rows(&fleet, now).await,
        listing_error: fleet.listing_error(),
        now,
    };
    match page.render() {
        Ok(html) => Html(html).into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot render the page: {e}\n"),
        )
            .into_response(),
    }
}

/// `/api/queues`: the list as JSON, what the page shows.
pub(crate) async fn api(State(fleet): State<Fleet>) -> Response {
    Json(rows(&fleet, now_ms()).await).into_response()
}

/// `/metrics`: every queue's metrics, each series labelled `queue` with its workspace's
/// directory; a queue that cannot be read is left out (its row on the list says why).
pub(crate) async fn metrics(State(fleet): State<Fleet>) -> Response {
    let mut read = Vec::new();
    for m in fleet.members() {
        let Opened::Open { ui, .. } = m.state else {
            continue;
        };
        let counts = ui
            .app()
            .db()
            .call(|db| Ok((db.stats()?, db.lock()?.held)))
            .await;
        match counts {
            Ok((stats, held)) => read.push((m.name, stats, held)),
            Err(e) => tracing::warn!("hookq ui: /metrics: {}: {e}", m.name),
        }
    }
    let now = now_ms();
    let snapshots: Vec<_> = read
        .iter()
        .map(|(name, stats, lock_held)| {
            (
                name.as_str(),
                crate::metrics::QueueSnapshot {
                    stats,
                    lock_held: *lock_held,
                    now_ms: now,
                },
            )
        })
        .collect();
    (
        [(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)],
        crate::metrics::queues_metrics(&snapshots),
    )
        .into_response()
}

/// `/q/<slug>/…`: the request, its path made the queue router's own (`/…`), handed to that
/// queue's router; its pages link within `q/<slug>/`.
pub(crate) async fn dispatch(State(fleet): State<Fleet>, req: Request) -> Response {
    let path = req.uri().path();
    let rest = path.strip_prefix("/q/").unwrap_or_default();
    let (slug, inner) = match rest.split_once('/') {
        Some((slug, inner)) => (slug.to_owned(), format!("/{inner}")),
        None => (rest.to_owned(), "/".to_owned()),
    };
    let (name, router) = match fleet.member(&slug) {
        Some((_, Opened::Open { router, .. })) => (slug, router),
        Some((name, Opened::Failed(e))) => {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                format!("the queue of {name} cannot be opened: {e}\n"),
            )
                .into_response();
        }
        None => return not_found().await,
    };
    let target = match req.uri().query() {
        Some(q) => format!("{inner}?{q}"),
        None => inner,
    };
    let uri = match target.parse::<Uri>() {
        Ok(uri) => uri,
        Err(e) => {
            return (StatusCode::BAD_REQUEST, format!("{name}: bad path: {e}\n")).into_response();
        }
    };
    // A request of its own: what this router's matching left in the extensions (the path's
    // parameters) would be taken for the queue router's. The address asked for goes along,
    // for the queue's pages to link from.
    let outer = req.extensions().get::<OriginalUri>().cloned();
    let (parts, body) = req.into_parts();
    let mut req = Request::new(body);
    *req.method_mut() = parts.method;
    *req.uri_mut() = uri;
    *req.version_mut() = parts.version;
    *req.headers_mut() = parts.headers;
    if let Some(outer) = outer {
        req.extensions_mut().insert(outer);
    }
    let mut router = router;
    match tower_service::Service::call(&mut router, req).await {
        Ok(resp) => resp,
        Err(never) => match never {},
    }
}

/// Any path the view does not have.
pub(crate) async fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        "no such page or queue in this hookq view\n",
    )
        .into_response()
}

