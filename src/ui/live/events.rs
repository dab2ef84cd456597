//! `GET /events`: the watcher's generations as Server-Sent Events.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::response::IntoResponse;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::stream;

use super::Live;

/// How often an idle stream sends a comment, so that proxies keep it open.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// How long a browser waits before it connects again after a stream ended.
pub const RETRY: Duration = Duration::from_secs(1);

/// `event: hello` with the current generation, then `event: change` with each new one, until
/// the view stops. Nothing here reads the database: every stream waits on the channel the one
/// watcher feeds.
pub(super) async fn events(State(live): State<Arc<Live>>) -> impl IntoResponse {
    stream(live.shared.subscribe()).await
}

/// The events of the generations `rx` receives: `hello` with the current one, then `change`
/// with each new one, until its sender is gone.
pub(super) async fn stream(mut rx: tokio::sync::watch::Receiver<u64>) -> impl IntoResponse {
    let first = *rx.borrow_and_update();
    let hello = Event::default()
        .event("hello")
        .retry(RETRY)
        .data(first.to_string());
    let changes = stream::unfold(rx, |mut rx| async move {
        rx.changed().await.ok()?;
        let generation = *rx.borrow_and_update();
        let event = Event::default()
            .event("change")
            .data(generation.to_string());
        Some((Ok::<_, Infallible>(event), rx))
    });
    let stream = futures_util::StreamExt::chain(stream::once(async { Ok(hello) }), changes);
    (
        [UNBUFFERED],
        Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)),
    )
}

/// Asks a proxy in front of the view (nginx) to pass each event on as it comes.
pub const UNBUFFERED: (&str, &str) = ("x-accel-buffering", "no");
