//! The view's router and the state every handler shares: the queue's connections, the config,
//! the tokens.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::extract::{DefaultBodyLimit, OriginalUri, Request};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::{get, post};

use crate::queue::{Options, Queue};
use crate::queue::workspace::Workspace;

use super::auth;
use super::db::Shared;
use super::error::UiError;
use super::live::{self, Live, LiveError};
use super::{actions, api, assets, pages};

/// The largest request body the view reads: an action form is a few dozen bytes.
const BODY_LIMIT: usize = 4 * 1024;

/// What the view serves and how.
#[derive(Debug, Clone)]
pub struct UiConfig {
    /// The workspace whose queue it shows.
    pub workspace: Workspace,
    /// How its queue is opened: the host's own options, or [`Options::from_env`] as `hookq ui`
    /// builds them. The view opens its connections with these and reads no variable itself.
    pub options: Options,
    /// Whether the pages offer retry, drop, pause and resume (`hookq ui --actions`).
    pub actions: bool,
    /// The token every request must present (`Authorization: Bearer`, or the cookie a visit
    /// to `?token=` sets); `None` serves anyone who reaches it.
    pub token: Option<String>,
}

impl UiConfig {
    /// The view of `workspace`'s queue (the database its config names), read-only and with no
    /// token.
    pub fn new(workspace: Workspace) -> Self {
        Self {
            workspace,
            options: Options::default(),
            actions: false,
            token: None,
        }
    }
}

/// The state shared by every request of one router.
#[derive(Clone)]
pub(crate) struct App(Arc<Inner>);

struct Inner {
    config: UiConfig,
    db: Shared,
    place: String,
    postgres: bool,
    csrf: String,
    /// The flash messages actions left for the page they send back to, by key.
    flashes: Mutex<Vec<(String, String)>>,
    flash_count: AtomicU64,
    /// The live updates' watcher, one per server, however many pages listen.
    live: Arc<Live>,
}

impl App {
    /// How many changes the live view's watcher has seen.
    pub(crate) fn generation(&self) -> u64 {
        self.0.live.generation()
    }

    /// Whether actions are on.
    pub(crate) fn actions(&self) -> bool {
        self.0.config.actions
    }

    pub(crate) fn token(&self) -> Option<&str> {
        self.0.config.token.as_deref()
    }

    /// The form token of this server's action forms.
    pub(crate) fn csrf(&self) -> &str {
        &self.0.csrf
    }

    /// Where the queue is, as pages name it (its password masked).
    pub(crate) fn place(&self) -> &str {
        &self.0.place
    }

    pub(crate) fn is_postgres(&self) -> bool {
        self.0.postgres
    }

    /// The queue's connections, called on tokio's blocking pool.
    pub(crate) fn db(&self) -> &Shared {
        &self.0.db
    }

    /// The live view's watcher.
    pub(crate) fn live(&self) -> &Arc<Live> {
        &self.0.live
    }

    /// Keeps `message` for the next page that asks for `key`; the oldest messages go first.
    pub(crate) fn leave_flash(&self, message: String) -> String {
        let mut f = self.0.flashes.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (self.0.flash_count.fetch_add(1, Ordering::Relaxed) + 1).to_string();
        if f.len() >= 64 {
            f.remove(0);
        }
        f.push((key.clone(), message));
        key
    }

    /// The flash message left under `key`, taken.
    pub(crate) fn take_flash(&self, key: &str) -> Option<String> {
        let mut f = self.0.flashes.lock().unwrap_or_else(PoisonError::into_inner);
        let at = f
            .iter()
            .position(|(k, _)| k == key)?;
        Some(f.remove(at).1)
    }
}

/// The web view of one workspace's queue, opened: what [`router`] serves.
pub struct Ui {
    app: App,
}

impl Ui {
    /// Opens `config`'s workspace queue (the database the workspace or `config.options`
    /// names, SQLite or PostgreSQL) for the view.
    pub fn open(config: UiConfig) -> Result<Ui, UiError> {
        let db = Queue::open_with(&config.workspace, config.options.clone())?;
        let place = db.place().to_owned();
        let postgres = db.is_postgres();
        let csrf = auth::random_token().map_err(|source| UiError::Io {
            path: "/dev/urandom".into(),
            source,
        })?;
        let live = Live::watching(config.workspace.clone(), db.watcher()?).map_err(|e| match e {
            LiveError::Queue(e) => UiError::Queue(e),
            LiveError::Spawn(e) => UiError::Internal(e.to_string()),
        })?;
        let db = Shared::new(config.workspace.clone(), config.options.clone(), db);
        let app = App(Arc::new(Inner {
            config,
            db,
            place,
            postgres,
            csrf,
            flashes: Mutex::new(Vec::new()),
            flash_count: AtomicU64::new(0),
            live,
        }));
        Ok(Ui { app })
    }

    /// Where the queue is, as the pages name it (a database password masked).
    pub fn place(&self) -> &str {
        self.app.place()
    }

    /// The state its router's handlers share.
    pub(crate) fn app(&self) -> &App {
        &self.app
    }

    /// The view's router. Every request's reads and writes of the queue run on tokio's
    /// blocking pool, so it must be served on a tokio runtime.
    pub fn router(&self) -> Router {
        routes(self.app.clone())
    }
}

/// The web view of `config`'s workspace queue as a router a host serves, or nests under a
/// prefix (`Router::new().nest("/hooks", router)`): every link of its pages is relative.
/// [`Ui::open`] and [`Ui::router`] in one.
pub fn router(config: UiConfig) -> Result<Router, UiError> {
    Ok(Ui::open(config)?.router())
}

fn routes(app: App) -> Router {
    let mut pages = Router::new()
        .route("/", get(pages::overview))
        .route("/pending", get(pages::pending))
        .route("/history", get(pages::history))
        .route("/task/{id}", get(pages::task))
        .route("/task/{id}/log/{file}", get(pages::log))
        .route("/api/overview", get(api::overview))
        .route("/api/pending", get(api::pending))
        .route("/api/history", get(api::history))
        .route("/api/task/{id}", get(api::task))
        .route("/api/task/{id}/logs", get(api::logs))
        .route("/metrics", get(api::metrics))
        .route("/assets/style.css", get(assets::style));
    if app.actions() {
        // A form posted from another site is refused before its token is read.
        let forms = Router::new()
            .route("/action/retry/{id}", post(actions::retry))
            .route("/action/drop/{id}", post(actions::drop))
            .route("/action/pause", post(actions::pause))
            .route("/action/resume", post(actions::resume))
            .route_layer(axum::middleware::from_fn(auth::same_site_forms));
        pages = pages.merge(forms);
    }
    let view: Router = pages
        .fallback(pages::not_found)
        .with_state(app.clone());
    // The live updates (`/events`, a log's `/tail`, `/assets/live.js`), under the same token
    // check and body limit.
    let view = view.merge(live::routes(Arc::clone(&app.0.live)));
    view.layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::from_fn_with_state(app, auth::require_token))
        .layer(axum::middleware::from_fn(secure_headers))
        .layer(axum::middleware::from_fn(server_timing))
}

/// Says how long the server took to make each response, in a `Server-Timing` header
/// (`app;dur=<ms>`): a browser's network panel shows it, and the benchmark reads it. For a
/// page, the whole of its work: its reads and its rendering. For a stream, until it began.
pub(crate) async fn server_timing(req: Request, next: Next) -> Response {
    let start = std::time::Instant::now();
    let mut resp = next.run(req).await;
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    if let Ok(v) = HeaderValue::from_str(&format!("app;dur={ms:.3}")) {
        resp.headers_mut().insert("server-timing", v);
    }
    resp
}

/// Sets the headers that keep every response to itself: no framing, no sniffing, no
/// referrer, scripts and styles from the view only.
pub(crate) async fn secure_headers(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'",
        ),
    );
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    resp
}

/// The prefix a host nested this router under (`/hooks`), empty when it is served at `/`.
pub(crate) fn mount(req: &Request) -> String {
    let inner = req.uri().path();
    let outer = req
        .extensions()
        .get::<OriginalUri>()
        .map_or(inner, |o| o.0.path());
    mount_of(outer, inner).to_owned()
}

/// The part of `outer` (the path the client asked for) before `inner` (the router's own).
fn mount_of<'a>(outer: &'a str, inner: &str) -> &'a str {
    match outer.strip_suffix(inner) {
        Some(m) => m,
        None if inner == "/" => outer.trim_end_matches('/'),
        None => "",
    }
}

/// The relative reference from a page at router path `path` to the router's root: `./` for
/// `/` and `/pending`, `../` for `/task/t1`.
pub(crate) fn base(path: &str) -> String {
    let depth = path.trim_start_matches('/').matches('/').count();
    if depth == 0 {
        "./".to_owned()
    } else {
        "../".repeat(depth)
    }
}

/// How a page asked for as `outer` (the router's own path `inner`) links: its `<base href>`,
/// which resolves to the router's root with a slash (`/hooks/`), and the reference from there
/// to the root page. A nested router's root page is `/hooks`, which `/hooks/` does not reach.
pub(crate) fn links(outer: &str, inner: &str) -> (String, String) {
    let mount = mount_of(outer, inner);
    let last = |p: &str| p.rsplit('/').next().unwrap_or_default().to_owned();
    let base = if inner == "/" && !outer.ends_with('/') {
        format!("{}/", last(outer))
    } else {
        base(inner)
    };
    let root = match last(mount) {
        seg if seg.is_empty() => "./".to_owned(),
        seg => format!("../{seg}"),
    };
    (base, root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounts() {
        assert_eq!(mount_of("/", "/"), "");
        assert_eq!(mount_of("/pending", "/pending"), "");
        assert_eq!(mount_of("/hooks/pending", "/pending"), "/hooks");
        assert_eq!(mount_of("/hooks", "/"), "/hooks");
        assert_eq!(mount_of("/hooks/", "/"), "/hooks");
    }

    #[test]
    fn links_of_a_nested_router() {
        assert_eq!(links("/", "/"), ("./".into(), "./".into()));
        assert_eq!(links("/task/t1", "/task/t1"), ("../".into(), "./".into()));
        assert_eq!(links("/hooks", "/"), ("hooks/".into(), "../hooks".into()));
        assert_eq!(links("/a/hooks/pending", "/pending"), ("./".into(), "../hooks".into()));
        assert_eq!(links("/hooks/task/t1", "/task/t1"), ("../".into(), "../hooks".into()));
    }

    #[test]
    fn bases() {
        assert_eq!(base("/"), "./");
        assert_eq!(base("/pending"), "./");
        assert_eq!(base("/task/t1"), "../");
        assert_eq!(base("/task/t1/log/after_merge-01.log"), "../../../");
    }
}
