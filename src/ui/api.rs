//! The JSON beside each page, in the shapes `hookq queue --json`, `queue history --json`,
//! `task show --json` and `queue log --json` print; the same query parameters as the pages.

use axum::Json;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};

use crate::queue::model::now_ms;

use super::app::App;
use super::error::UiError;
use super::model;
use super::pages::task_id;
use super::params::Raw;

/// A JSON response, or the failure as `{"error": "…"}` with its status.
fn json<T: serde::Serialize>(r: Result<T, UiError>) -> Response {
    match r {
        Ok(v) => Json(v).into_response(),
        Err(e) => (
            e.status(),
            Json(serde_json::json!({ "error": e.to_string() })),
        )
            .into_response(),
    }
}

/// `/api/overview`: the lock, paused or not, the counts (`queue stats --json`), the last 24
/// hours' outcomes an hour each, the slowest hooks.
pub(crate) async fn overview(State(app): State<App>) -> Response {
    let now = now_ms();
    json(app.db().call(move |db| model::overview(db, now)).await)
}

/// `/api/pending`: a page of pending points, as `hookq queue --json` prints it.
pub(crate) async fn pending(State(app): State<App>, raw: Raw) -> Response {
    let r = async {
        let f = raw.pending()?;
        app.db().call(move |db| model::pending(db, &f)).await
    };
    json(r.await)
}

/// `/api/history`: a page of history rows, as `hookq queue history --json` prints them.
pub(crate) async fn history(State(app): State<App>, raw: Raw) -> Response {
    let r = async {
        let f = raw.history()?;
        app.db()
            .call(move |db| Ok(model::history(db, &f)?.0))
            .await
    };
    json(r.await)
}

/// `/api/task/{id}`: a task, as `hookq task show --json` prints it.
pub(crate) async fn task(State(app): State<App>, Path(id): Path<String>) -> Response {
    let r = async {
        let id = task_id(&id)?;
        app.db()
            .call(move |db| {
                model::task(db, &id)?
                    .ok_or_else(|| UiError::NotFound(format!("no task {id} in {}", db.place())))
            })
            .await
    };
    json(r.await)
}

/// `/api/task/{id}/logs`: the task's log files on this host, as `hookq queue log --json`
/// prints them.
pub(crate) async fn logs(State(app): State<App>, Path(id): Path<String>) -> Response {
    let r = async {
        let id = task_id(&id)?;
        app.db().call(move |db| Ok(db.log_files(&id, None)?)).await
    };
    json(r.await)
}

/// `/metrics`: the queue's metrics in Prometheus text format (`hookq::metrics`): pending by
/// point, the oldest pending point's age, the runner lock held, paused, parked.
pub(crate) async fn metrics(State(app): State<App>) -> Response {
    let text = app
        .db()
        .call(|db| Ok(crate::metrics::read_queue_metrics(db)?))
        .await;
    match text {
        Ok(text) => ([(axum::http::header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)], text)
            .into_response(),
        Err(e) => (e.status(), e.to_string()).into_response(),
    }
}
