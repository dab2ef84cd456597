//! Serving metrics over HTTP: `GET /metrics` on an address of its own, from a thread of its
//! own, whatever the rest of the program does (the hub's drain is synchronous).

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::sync::oneshot;

use super::catalog::CONTENT_TYPE;

/// Why metrics cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address could not be listened on.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The thread that serves, or its runtime, could not be started.
    #[error("cannot start the metrics server: {0}")]
    Start(#[source] std::io::Error),
}

/// Metrics served on an address until this is dropped.
#[derive(Debug)]
pub struct MetricsServer {
    addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// The address it listens on (with the port the system chose when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Serves `GET /metrics` on `addr` (any other path: 404) with what `render` returns, in the
/// Prometheus text format, from a thread of its own running a single-threaded runtime. The
/// address is bound before this returns, so a failure to listen is this call's error, and
/// port 0 gets a free port ([`MetricsServer::local_addr`]).
pub fn serve(
    addr: SocketAddr,
    render: impl Fn() -> String + Send + Sync + 'static,
) -> Result<MetricsServer, ServeError> {
    let listener =
        std::net::TcpListener::bind(addr).map_err(|source| ServeError::Bind { addr, source })?;
    let local = listener
        .local_addr()
        .and_then(|a| listener.set_nonblocking(true).map(|()| a))
        .map_err(|source| ServeError::Bind { addr, source })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .map_err(ServeError::Start)?;
    let render = Arc::new(render);
    let app = Router::new().route(
        "/metrics",
        get(move || {
            let render = Arc::clone(&render);
            async move { ([(header::CONTENT_TYPE, CONTENT_TYPE)], render()).into_response() }
        }),
    );
    let (tx, rx) = oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("hookq-metrics".into())
        .spawn(move || {
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::warn!("metrics server: {e}");
                        return;
                    }
                };
                let served = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = rx.await;
                    })
                    .await;
                if let Err(e) = served {
                    tracing::warn!("metrics server: {e}");
                }
            });
        })
        .map_err(ServeError::Start)?;
    Ok(MetricsServer {
        addr: local,
        shutdown: Some(tx),
        thread: Some(thread),
    })
}
