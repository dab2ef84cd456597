//! The view of many workspaces' queues (`hookq ui -C a -C b`, `hookq ui --workspaces FILE`, or
//! a host's own set): the list of the queues at its root, and each queue's own view, the pages
//! one queue's [`router`](super::router) serves, under `q/<slug>/`.
//!
//! Each queue is a [`Ui`] of its own (its connections, its watcher); the list hears of each
//! one's changes through its watcher and tells its own page. A queue that cannot be opened is a
//! row with its error, opened again every few seconds. A listing file is read again when it
//! changes: a new line adds its queue, a removed one drops it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, RwLock, Weak};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::{any, get};
use tokio::sync::watch;

use crate::queue::Options;
use crate::queue::config::FileVersion;
use crate::queue::fleet::Listing;
use crate::queue::workspace::Workspace;

use super::app::{Ui, UiConfig, secure_headers, server_timing};
use super::error::UiError;
use super::{assets, auth, live, queues};

/// How often a listing file is looked at for a change.
const REREAD: Duration = Duration::from_secs(1);
/// How long a queue that could not be opened waits before it is tried again.
const RETRY: Duration = Duration::from_secs(5);

/// What a view of many queues serves: the workspaces of a listing, each queue opened as
/// [`UiConfig`] would open it alone.
#[derive(Debug, Clone)]
pub struct FleetConfig {
    /// The workspaces' directories, or a listing file read again when it changes (as `hookq
    /// hub --workspaces` reads it).
    pub listing: Listing,
    /// How each queue is opened ([`UiConfig::options`]).
    pub options: Options,
    /// Whether each queue's pages offer retry, drop, pause and resume.
    pub actions: bool,
    /// The token every request must present, to the list and to every queue's pages alike;
    /// `None` serves anyone who reaches it.
    pub token: Option<String>,
}

impl FleetConfig {
    /// The view of `listing`'s workspaces, read-only and with no token.
    pub fn new(listing: Listing) -> Self {
        Self {
            listing,
            options: Options::default(),
            actions: false,
            token: None,
        }
    }
}

/// The view of many queues, opened: what [`Fleet::router`] serves. Cloning it shares it.
#[derive(Clone)]
pub struct Fleet(Arc<Inner>);

impl std::fmt::Debug for Fleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fleet")
            .field("queues", &self.len())
            .finish_non_exhaustive()
    }
}

struct Inner {
    source: Source,
    token: Option<String>,
    members: RwLock<Vec<Member>>,
    relay: Arc<Relay>,
    /// The listing file's version when it was last read.
    version: Mutex<Option<FileVersion>>,
    /// Why the listing file could not be read again, while it cannot.
    listing_error: Mutex<Option<String>>,
    stopper: Arc<Stopper>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stopper.stop();
    }
}

/// Where the queues come from.
enum Source {
    Listing {
        listing: Listing,
        options: Options,
        actions: bool,
    },
    Configs,
}

/// How one queue is opened.
#[derive(Clone)]
enum Recipe {
    Dir(PathBuf),
    Config(Box<UiConfig>),
}

/// One queue of the view.
pub(crate) struct Member {
    recipe: Recipe,
    /// The name the list shows and `/metrics` labels it with: the workspace's directory.
    pub(crate) name: String,
    /// Its part of the URL: `q/<slug>/`.
    pub(crate) slug: String,
    pub(crate) state: Opened,
    tried: Instant,
}

/// A queue opened, or why it is not.
#[derive(Clone)]
pub(crate) enum Opened {
    Open { ui: Arc<Ui>, router: Router },
    Failed(String),
}

/// Tells the list's page of every queue's changes and of the listing's.
pub(crate) struct Relay {
    generation: AtomicU64,
    sender: watch::Sender<u64>,
}

impl Relay {
    fn bump(&self) {
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        self.sender.send_replace(generation);
    }
}

/// Ends the thread that reads the listing again.
struct Stopper {
    stopped: Mutex<bool>,
    wake: Condvar,
}

impl Stopper {
    fn stop(&self) {
        *self.stopped.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.wake.notify_all();
    }

    /// Waits `d`; whether the view is still served.
    fn wait(&self, d: Duration) -> bool {
        let stopped = self.stopped.lock().unwrap_or_else(PoisonError::into_inner);
        let stopped = self
            .wake
            .wait_timeout_while(stopped, d, |stopped| !*stopped)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
        !*stopped
    }
}

impl Fleet {
    /// Opens the queue of each workspace `config.listing` names. Fails only when the listing
    /// file cannot be read; a workspace whose queue cannot be opened is listed with its error.
    pub fn open(config: FleetConfig) -> Result<Fleet, UiError> {
        let dirs = config.listing.dirs().map_err(|e| UiError::Io {
            path: e.path,
            source: e.source,
        })?;
        let version = config.listing.file().and_then(FileVersion::of);
        let recipes = dirs.into_iter().map(Recipe::Dir).collect();
        let source = Source::Listing {
            listing: config.listing,
            options: config.options,
            actions: config.actions,
        };
        Ok(Fleet::start(source, recipes, config.token, version))
    }

    /// The view of a host's own queues, each opened as [`Ui::open`] opens it alone (its own
    /// options and actions); their own tokens are not asked: `token` is, of every request.
    pub fn of(queues: Vec<UiConfig>, token: Option<String>) -> Fleet {
        let recipes = queues
            .into_iter()
            .map(|c| Recipe::Config(Box::new(c)))
            .collect();
        Fleet::start(Source::Configs, recipes, token, None)
    }

    fn start(
        source: Source,
        recipes: Vec<Recipe>,
        token: Option<String>,
        version: Option<FileVersion>,
    ) -> Fleet {
        let (sender, _) = watch::channel(0);
        let relay = Arc::new(Relay {
            generation: AtomicU64::new(0),
            sender,
        });
        let opened = open_all(&source, &recipes, &relay);
        let mut members: Vec<Member> = Vec::new();
        join(&mut members, recipes, opened);
        let stopper = Arc::new(Stopper {
            stopped: Mutex::new(false),
            wake: Condvar::new(),
        });
        let fleet = Fleet(Arc::new(Inner {
            source,
            token,
            members: RwLock::new(members),
            relay,
            version: Mutex::new(version),
            listing_error: Mutex::new(None),
            stopper: Arc::clone(&stopper),
        }));
        let weak = Arc::downgrade(&fleet.0);
        let spawned = std::thread::Builder::new()
            .name("hookq-ui-fleet".into())
            .spawn(move || keep_up(&weak, &stopper));
        if let Err(e) = spawned {
            tracing::warn!("cannot start the thread that reads the workspace listing again: {e}");
        }
        fleet
    }

    /// How many queues it lists.
    pub fn len(&self) -> usize {
        self.members().len()
    }

    /// Whether it lists no queue.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The router of the list (`/`, `/api/queues`, `/metrics` of every queue) and of each
    /// queue's pages (`/q/<slug>/…`). Served on a tokio runtime, at the root or nested under
    /// a prefix of a host's: every link is relative.
    pub fn router(&self) -> Router {
        let list = Router::new()
            .route("/", get(queues::page))
            .route("/api/queues", get(queues::api))
            .route("/metrics", get(queues::metrics))
            .route("/assets/style.css", get(assets::style))
            .route("/q/{*path}", any(queues::dispatch))
            .fallback(queues::not_found)
            .with_state(self.clone())
            .merge(live::list_routes(self.0.relay.sender.subscribe()));
        list.layer(axum::middleware::from_fn_with_state(self.clone(), require_token))
            .layer(axum::middleware::from_fn(secure_headers))
            .layer(axum::middleware::from_fn(server_timing))
    }

    /// The queues as they are now, in the listing's order.
    pub(crate) fn members(&self) -> Vec<Member> {
        self.0
            .members
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|m| Member {
                recipe: m.recipe.clone(),
                name: m.name.clone(),
                slug: m.slug.clone(),
                state: m.state.clone(),
                tried: m.tried,
            })
            .collect()
    }

    /// The queue whose URL part is `slug`.
    pub(crate) fn member(&self, slug: &str) -> Option<(String, Opened)> {
        self.0
            .members
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|m| m.slug == slug)
            .map(|m| (m.name.clone(), m.state.clone()))
    }

    /// How many changes of any queue, or of the listing, the list has heard of.
    pub(crate) fn generation(&self) -> u64 {
        self.0.relay.generation.load(Ordering::SeqCst)
    }

    /// Why the listing file cannot be read again, while it cannot.
    pub(crate) fn listing_error(&self) -> Option<String> {
        self.0
            .listing_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Reads a changed listing file again and tries again the queues that could not be
    /// opened; tells the list when anything changed.
    fn refresh(&self) {
        let inner = &*self.0;
        let mut changed = false;
        if let Source::Listing { listing, .. } = &inner.source
            && let Some(path) = listing.file()
        {
            let now = FileVersion::of(path);
            let failing = inner
                .listing_error
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_some();
            let mut version = inner.version.lock().unwrap_or_else(PoisonError::into_inner);
            if now != *version || failing {
                *version = now;
                drop(version);
                let mut error = inner
                    .listing_error
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                match listing.dirs() {
                    Ok(dirs) => {
                        changed |= error.take().is_some();
                        drop(error);
                        changed |= self.sync(dirs);
                    }
                    Err(e) => {
                        if error.is_none() {
                            tracing::warn!("{e}; the workspaces it listed before stay listed");
                            changed = true;
                        }
                        *error = Some(e.to_string());
                    }
                }
            }
        }
        changed |= self.retry();
        if changed {
            inner.relay.bump();
        }
    }

    /// Makes the queues those of `dirs`, in their order; whether any came or went.
    fn sync(&self, dirs: Vec<PathBuf>) -> bool {
        let inner = &*self.0;
        let listed: Vec<PathBuf> = self
            .members()
            .iter()
            .filter_map(|m| match &m.recipe {
                Recipe::Dir(d) => Some(d.clone()),
                Recipe::Config(_) => None,
            })
            .collect();
        if listed == dirs {
            return false;
        }
        let new: Vec<Recipe> = dirs
            .iter()
            .filter(|d| !listed.contains(d))
            .cloned()
            .map(Recipe::Dir)
            .collect();
        let opened = open_all(&inner.source, &new, &inner.relay);
        let mut members = inner.members.write().unwrap_or_else(PoisonError::into_inner);
        let (kept, gone): (Vec<Member>, Vec<Member>) = std::mem::take(&mut *members)
            .into_iter()
            .partition(|m| matches!(&m.recipe, Recipe::Dir(d) if dirs.contains(d)));
        *members = kept;
        join(&mut members, new, opened);
        let at = |m: &Member| match &m.recipe {
            Recipe::Dir(d) => dirs.iter().position(|x| x == d),
            Recipe::Config(_) => None,
        };
        members.sort_by_key(at);
        drop(members);
        // Their watchers stop as they are dropped: not under the lock.
        drop(gone);
        true
    }

    /// Opens again the queues that could not be opened and have waited [`RETRY`]; whether a
    /// row changed.
    fn retry(&self) -> bool {
        let inner = &*self.0;
        let due: Vec<(String, Recipe)> = self
            .members()
            .into_iter()
            .filter(|m| matches!(m.state, Opened::Failed(_)) && m.tried.elapsed() >= RETRY)
            .map(|m| (m.slug, m.recipe))
            .collect();
        let mut changed = false;
        for (slug, recipe) in due {
            let state = open(&inner.source, &recipe, &inner.relay);
            let mut members = inner.members.write().unwrap_or_else(PoisonError::into_inner);
            if let Some(m) = members.iter_mut().find(|m| m.slug == slug) {
                changed |= match (&m.state, &state) {
                    (Opened::Failed(a), Opened::Failed(b)) => a != b,
                    _ => true,
                };
                m.state = state;
                m.tried = Instant::now();
            }
        }
        changed
    }
}

/// The thread that keeps the view's queues up to date, until the view is dropped.
fn keep_up(fleet: &Weak<Inner>, stopper: &Stopper) {
    while stopper.wait(REREAD) {
        let Some(inner) = fleet.upgrade() else {
            return;
        };
        Fleet(inner).refresh();
    }
}

/// Opens each of `recipes`, at the same time (a database slow to answer delays only its own).
/// Adds a member for each of `recipes`, opened as `opened` says, each under a slug no member
/// has yet.
fn join(members: &mut Vec<Member>, recipes: Vec<Recipe>, opened: Vec<Opened>) {
    for (recipe, state) in recipes.into_iter().zip(opened) {
        let name = name_of(&recipe);
        let slug = slug_of(&name, members.iter().map(|m| m.slug.as_str()));
        members.push(Member {
            recipe,
            name,
            slug,
            state,
            tried: Instant::now(),
        });
    }
}

fn open_all(source: &Source, recipes: &[Recipe], relay: &Arc<Relay>) -> Vec<Opened> {
    std::thread::scope(|scope| {
        let opening: Vec<_> = recipes
            .iter()
            .map(|r| scope.spawn(move || open(source, r, relay)))
            .collect();
        opening
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Opened::Failed("opening the queue panicked".into()))
            })
            .collect()
    })
}

/// Opens one queue, its watcher telling `relay` too.
fn open(source: &Source, recipe: &Recipe, relay: &Arc<Relay>) -> Opened {
    let config = match (recipe, source) {
        (
            Recipe::Dir(dir),
            Source::Listing {
                options, actions, ..
            },
        ) => match Workspace::discover(dir) {
            Ok(workspace) => UiConfig {
                workspace,
                options: options.clone(),
                actions: *actions,
                token: None,
            },
            Err(e) => return Opened::Failed(e.to_string()),
        },
        (Recipe::Dir(dir), Source::Configs) => UiConfig::new(Workspace::at(dir)),
        (Recipe::Config(config), _) => UiConfig {
            token: None,
            ..(**config).clone()
        },
    };
    match Ui::open(config) {
        Ok(ui) => {
            let relay = Arc::clone(relay);
            ui.app().live().follow(Box::new(move || relay.bump()));
            let router = ui.router();
            Opened::Open {
                ui: Arc::new(ui),
                router,
            }
        }
        Err(e) => Opened::Failed(e.to_string()),
    }
}

/// The name a queue is listed and labelled by: its directory as listed, or its workspace's.
fn name_of(recipe: &Recipe) -> String {
    match recipe {
        Recipe::Dir(d) => d.display().to_string(),
        Recipe::Config(c) => c.workspace.root().display().to_string(),
    }
}

/// The URL part of the queue named `name`: its last path component, in letters, digits, `-`,
/// `_` and `.` (anything else a `-`), made unique among `taken` with `-2`, `-3`, ….
pub(crate) fn slug_of<'a>(name: &str, taken: impl Iterator<Item = &'a str> + Clone) -> String {
    let last = Path::new(name)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut base: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    if base.trim_matches('.').is_empty() {
        base = "queue".into();
    }
    let free = |s: &str| !taken.clone().any(|t| t == s);
    if free(&base) {
        return base;
    }
    (2..)
        .map(|n| format!("{base}-{n}"))
        .find(|s| free(s))
        .unwrap_or(base)
}

/// Lets a request through when the view needs no token or it presents the right one.
async fn require_token(State(fleet): State<Fleet>, req: Request, next: Next) -> Response {
    auth::require(fleet.0.token.as_deref(), req, next).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_unique_url_parts() {
        let none = std::iter::empty::<&str>();
        assert_eq!(slug_of("/srv/widgets", none.clone()), "widgets");
        assert_eq!(slug_of("/srv/a b/ü?x", none.clone()), "--x");
        assert_eq!(slug_of("..", none.clone()), "queue");
        assert_eq!(slug_of("/", none), "queue");
        assert_eq!(slug_of("/x/widgets", ["widgets"].into_iter()), "widgets-2");
        assert_eq!(
            slug_of("/y/widgets", ["widgets", "widgets-2"].into_iter()),
            "widgets-3"
        );
    }
}
