//! The library router nested under a host's prefix: its pages are served there, and every link
//! they hold resolves under the prefix.

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use tower::ServiceExt as _;

use hookq::queue::workspace::Workspace;
use hookq::ui::{UiConfig, router};

use crate::pages::moved;

/// A current-thread runtime, as a host might serve the router on.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// `GET uri` through `app`: the status, the `Location` header and the body.
pub async fn get(app: &Router, uri: &str) -> (StatusCode, Option<String>, String) {
    let req = Request::builder().uri(uri).body(Body::empty()).unwrap();
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let location = resp
        .headers()
        .get("location")
        .map(|v| v.to_str().unwrap().to_owned());
    let body = axum::body::to_bytes(resp.into_body(), 16 << 20)
        .await
        .unwrap();
    (status, location, String::from_utf8(body.to_vec()).unwrap())
}

/// Resolves the relative reference `href` against the page at `page` (both absolute paths
/// without a host), as a browser does for a page with `<base href>` `base`.
fn resolve(page: &str, base: &str, href: &str) -> String {
    let dir = &page[..=page.rfind('/').unwrap()];
    let mut parts: Vec<&str> = dir.split('/').filter(|s| !s.is_empty()).collect();
    let joined = format!("{base}{href}");
    // A reference ending in a folder (`./`, `../`) resolves to that folder, with its slash.
    let folder = joined.is_empty()
        || joined.ends_with('/')
        || joined
            .rsplit('/')
            .next()
            .is_some_and(|l| l == "." || l == "..");
    for seg in joined.split('/') {
        match seg {
            "." | "" => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    let mut out = format!("/{}", parts.join("/"));
    if folder && !out.ends_with('/') {
        out.push('/');
    }
    out
}

#[test]
fn nested_under_a_prefix_every_link_stays_under_it() {
    let ws = moved();
    let workspace = Workspace::discover(ws.root()).unwrap();
    let rt = runtime();
    rt.block_on(async {
        let view = router(UiConfig::new(workspace)).unwrap();
        let app = Router::new().nest("/hooks", view);
        for page in [
            "/hooks",
            "/hooks/pending",
            "/hooks/history",
            "/hooks/task/t1",
            "/hooks/task/t1/log/after_rework-01.log",
        ] {
            let (status, _, body) = get(&app, page).await;
            assert_eq!(status, StatusCode::OK, "{page}: {body}");
            let base = crate::server::attr_after(&body, "<base ", "href");
            if page == "/hooks" {
                assert_eq!(base, "hooks/");
            }
            for attr in ["href", "src", "action"] {
                for link in crate::server::attrs(&body, attr) {
                    // The base itself, and a resource given in the page (its icon, `data:`).
                    if link == base || link.starts_with("data:") {
                        continue;
                    }
                    let link = link.replace("&amp;", "&");
                    let target = resolve(page, &base, &link);
                    assert!(
                        target == "/hooks" || target.starts_with("/hooks/"),
                        "{page}: {link} -> {target}"
                    );
                    // Every link of the view's own leads to a page it serves.
                    let (status, _, _) = get(&app, &target).await;
                    assert!(
                        target.ends_with("/live.js") || status == StatusCode::OK,
                        "{page}: {link} -> {target}: {status}"
                    );
                }
            }
        }
        let (status, _, css) = get(&app, "/hooks/assets/style.css").await;
        assert_eq!(status, StatusCode::OK);
        assert!(css.contains("prefers-color-scheme"));
        let (status, _, _) = get(&app, "/pending").await;
        assert_eq!(status, StatusCode::NOT_FOUND, "nothing outside the prefix");
    });
}

#[test]
fn links_resolve_as_a_browser_resolves_them() {
    assert_eq!(resolve("/hooks/", "./", "pending"), "/hooks/pending");
    assert_eq!(
        resolve("/hooks/task/t1", "../", "task/t2"),
        "/hooks/task/t2"
    );
    assert_eq!(resolve("/hooks/task/t1", "../", "./"), "/hooks/");
    assert_eq!(
        resolve("/hooks/task/t1/log/a.log", "../../../", "assets/style.css"),
        "/hooks/assets/style.css"
    );
}
