//! Arbitrary requests through the router (paths with percent-escapes, `..`, very long segments,
//! any Unicode; any query string; GET and POST): none makes it panic, answer 5xx or hang.

use axum::body::Body;
use axum::http::{Method, Request};
use proptest::prelude::*;
use tower::ServiceExt as _;

use hookq::queue::workspace::Workspace;
use hookq::ui::{UiConfig, router};

use crate::nest::runtime;
use crate::pages::moved;
use crate::support::HANG;

/// A path segment: one of the view's own words, an escape, a dot segment, long text or any.
fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "",
            "task",
            "log",
            "api",
            "pending",
            "history",
            "action",
            "retry",
            "drop",
            "pause",
            "assets",
            "style.css",
            "live.js",
            "events",
            "tail",
            "t1",
            "t2",
            "logs",
            "after_rework-01.log",
            "..",
            ".",
            "%2e%2e",
            "%2F",
            "%00",
            "%ff",
            "%",
            "%zz",
            "%C3%A9",
            "é",
            "<script>",
            "%3Cscript%3E",
            "9223372036854775807",
            "-1",
            "99999999999999999999",
        ])
        .prop_map(str::to_owned),
        "[a-z%0-9._~-]{0,12}",
        "\\PC{0,8}",
        (1usize..20_000).prop_map(|n| "a".repeat(n)),
    ]
}

/// A query string: pairs of the listings' keys or any, with values of any kind.
fn query() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        prop::sample::select(vec![
            "task", "point", "outcome", "host", "after", "before", "flash", "token", "from",
        ])
        .prop_map(str::to_owned),
        "[a-z%]{0,6}",
    ];
    prop::collection::vec((key, segment()), 0..5).prop_map(|pairs| {
        pairs
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("&")
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn no_request_makes_the_router_panic_fail_or_hang(
        segments in prop::collection::vec(segment(), 0..7),
        query in query(),
        post in any::<bool>(),
        body in "\\PC{0,64}",
    ) {
        let (app, rt) = fixture();
        let uri = format!("/{}?{query}", segments.join("/"));
        // A URI that is not one HTTP can carry never reaches a router.
        let Ok(req) = Request::builder()
            .method(if post { Method::POST } else { Method::GET })
            .uri(&uri)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from(body))
        else {
            return Ok(());
        };
        let status = rt.block_on(async {
            let resp = tokio::time::timeout(HANG, app.clone().oneshot(req))
                .await
                .unwrap_or_else(|_| panic!("{uri}: no answer within {HANG:?}"))
                .unwrap();
            let status = resp.status();
            // A live stream (`/events`, a log's tail) answers at once and never ends: its body
            // is not read. Every other body ends, within the same bound.
            let streams = resp
                .headers()
                .get("content-type")
                .is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"));
            if !streams {
                tokio::time::timeout(
                    HANG,
                    axum::body::to_bytes(resp.into_body(), 64 << 20),
                )
                .await
                .unwrap_or_else(|_| panic!("{uri}: the body did not end within {HANG:?}"))
                .unwrap();
            }
            status
        });
        prop_assert!(!status.is_server_error(), "{uri}: {status}");
    }
}

/// One router (with actions on) over one workspace for every case.
fn fixture() -> (axum::Router, &'static tokio::runtime::Runtime) {
    use std::sync::OnceLock;
    static FIXTURE: OnceLock<(
        axum::Router,
        tokio::runtime::Runtime,
        crate::support::queue::Ws,
    )> = OnceLock::new();
    let (app, rt, _) = FIXTURE.get_or_init(|| {
        let ws = moved();
        let workspace = Workspace::discover(ws.root()).unwrap();
        let rt = runtime();
        let app = {
            let _guard = rt.enter();
            router(UiConfig {
                actions: true,
                ..UiConfig::new(workspace)
            })
            .unwrap()
        };
        (app, rt, ws)
    });
    (app.clone(), rt)
}
