//! Serving the view on a listener of its own (`hookq ui`): until a shutdown future resolves,
//! then a short grace for the requests under way. A live page's event streams never end by
//! themselves, so shutdown ends them at once: an open page does not hold the server for the
//! grace.

use std::future::Future;
use std::net::IpAddr;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use tokio::sync::watch;

/// How long the requests under way get to finish once shutdown begins.
const GRACE: Duration = Duration::from_secs(3);

/// The token a server listening on `ip` needs: none on loopback; off loopback `from_env`
/// (`HOOKQ_UI_TOKEN`) when set, else a fresh one, returned with `true` (to print once).
pub fn token_for(ip: IpAddr, from_env: Option<String>) -> std::io::Result<Option<(String, bool)>> {
    if ip.is_loopback() {
        return Ok(from_env.filter(|t| !t.is_empty()).map(|t| (t, false)));
    }
    match from_env.filter(|t| !t.is_empty()) {
        Some(t) => Ok(Some((t, false))),
        None => Ok(Some((super::auth::random_token()?, true))),
    }
}

/// Serves `router` on `listener` until `shutdown` resolves, then ends every event stream
/// (`text/event-stream`) at once and gives the other requests under way a short grace. A
/// server with no token
/// (`loopback_only`) answers only requests addressed to a loopback name, so a page of another
/// site that rebinds its DNS name to 127.0.0.1 reads nothing.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    loopback_only: bool,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (ending, ends) = watch::channel(false);
    let mut app = router.layer(middleware::from_fn_with_state(ends, end_streams_on_shutdown));
    if loopback_only {
        app = app.layer(middleware::from_fn(loopback_host));
    }
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let server = axum::serve(listener, app).with_graceful_shutdown(async {
        let _ = rx.await;
    });
    let server = tokio::spawn(async move { server.await });
    shutdown.await;
    // Streams first, so that the graceful shutdown finds their connections done.
    let _ = ending.send(true);
    let _ = tx.send(());
    match tokio::time::timeout(GRACE, server).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => Err(std::io::Error::other(e)),
        // Requests still open (live streams): the server ends with them.
        Err(_) => Ok(()),
    }
}

/// Ends an event stream's body, as a complete response, once `ends` says the server is
/// stopping; other responses pass as they are.
async fn end_streams_on_shutdown(
    State(mut ends): State<watch::Receiver<bool>>,
    req: Request,
    next: Next,
) -> Response {
    let resp = next.run(req).await;
    let streaming = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"));
    if !streaming {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    // A sender gone (the server being dropped) ends the stream too.
    let stopping = async move {
        let _ = ends.wait_for(|stopping| *stopping).await;
    };
    let body = futures_util::StreamExt::take_until(body.into_data_stream(), stopping);
    Response::from_parts(parts, Body::from_stream(body))
}

/// Answers 421 to a request whose `Host` is not a loopback name or address.
async fn loopback_host(req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    if is_loopback_host(host) {
        next.run(req).await
    } else {
        (
            StatusCode::MISDIRECTED_REQUEST,
            "this hookq ui answers requests to 127.0.0.1, [::1] or localhost only\n",
        )
            .into_response()
    }
}

/// Whether a `Host` header (`127.0.0.1:8080`, `[::1]:80`, `localhost`) names this machine's
/// loopback.
fn is_loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split_once(']').map_or(rest, |(n, _)| n)
    } else {
        host.rsplit_once(':').map_or(host, |(n, _)| n)
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for ok in ["127.0.0.1:80", "127.0.0.1", "localhost:1", "LOCALHOST", "[::1]:9", "127.8.0.1:5"] {
            assert!(is_loopback_host(ok), "{ok}");
        }
        for bad in ["evil.example", "evil.example:80", "10.0.0.1:80", "[::2]:1", "", "localhost.evil:1"] {
            assert!(!is_loopback_host(bad), "{bad}");
        }
    }

    #[test]
    fn a_token_off_loopback_only() {
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let any: IpAddr = "0.0.0.0".parse().unwrap();
        assert_eq!(token_for(lo, None).unwrap(), None);
        assert_eq!(token_for(any, Some("s3cret".into())).unwrap(), Some(("s3cret".into(), false)));
        let (t, generated) = token_for(any, Some(String::new())).unwrap().unwrap();
        assert!(generated && t.len() == 64);
    }
}
