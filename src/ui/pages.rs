//! The HTML pages: overview, pending, history, a task, a hook log. Each reads the queue on the
//! blocking pool and renders an askama template (which escapes every value).

use std::io::{Read as _, Seek as _, SeekFrom};

use askama::Template;
use axum::extract::{OriginalUri, Path};
use axum::http::{StatusCode, Uri};
use axum::response::{Html, IntoResponse, Response};

use crate::queue::Queue;
use crate::queue::ids::TaskId;
use crate::queue::logs::LogFile;
use crate::queue::model::{HistoryFilter, HistoryRow, PendingFilter, now_ms};

use super::ansi::{self, Style};
use super::app::{self, App};
use super::error::UiError;
use super::params::Raw;
use super::{chart, fmt, model};

/// The most of a log a page shows: its end.
const LOG_SHOWN: u64 = 1024 * 1024;
/// How far into the end of a long log a page looks for a line's start to begin at: past it,
/// the page begins inside a line (at a character's start) rather than leave a long line out.
const LINE_SEARCH: usize = 4096;

/// What every page has around its content.
pub(crate) struct Chrome {
    /// The relative reference to the router's root, the page's `<base href>`.
    base: String,
    /// The reference from `base` to the overview.
    root: String,
    title: String,
    place: String,
    flash: Option<String>,
    actions: bool,
    csrf: String,
    /// This page, relative to the root, as an action form's `back` field names it.
    here: String,
    /// The live view's generation when the request came, before the page's reads
    /// (`#main[data-generation]`): the live script asks again when it hears of a later one.
    generation: u64,
}

/// What every page reads of its request: the view's state, the live view's generation when the
/// request came, the address it was asked at (`outer`, under a host's prefix) and the router's
/// own (`uri`), and its query.
///
/// An extractor, so the generation is read before the handler reads the queue: a page rendered
/// from those reads shows at least this generation, and a change after it reaches the page (a
/// later read would let one slip between the two).
pub(crate) struct PageRequest {
    app: App,
    generation: u64,
    outer: Uri,
    uri: Uri,
    raw: Raw,
}

impl axum::extract::FromRequestParts<App> for PageRequest {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        app: &App,
    ) -> Result<PageRequest, std::convert::Infallible> {
        let generation = app.generation();
        let outer = parts
            .extensions
            .get::<OriginalUri>()
            .map_or_else(|| parts.uri.clone(), |o| o.0.clone());
        Ok(PageRequest {
            app: app.clone(),
            generation,
            outer,
            uri: parts.uri.clone(),
            raw: Raw::parse(parts.uri.query().unwrap_or_default()),
        })
    }
}

impl PageRequest {
    /// What the page titled `title` has around its content.
    fn chrome(&self, title: impl Into<String>) -> Chrome {
        Chrome::new(self, title, self.raw.flash.as_deref())
    }

    /// The page for the failure `e` of this request.
    fn error(&self, e: &UiError) -> Response {
        let heading = match e.status() {
            StatusCode::NOT_FOUND => "Not found",
            StatusCode::BAD_REQUEST => "Bad request",
            _ => "The queue cannot be read",
        };
        if e.status().is_server_error() {
            tracing::warn!("hookq ui: {} {}: {e}", self.uri.path(), e.status());
        }
        render(
            e.status(),
            &ErrorPage {
                page: Chrome::new(self, heading, None),
                heading: heading.to_owned(),
                message: e.to_string(),
            },
        )
    }
}

impl Chrome {
    fn new(req: &PageRequest, title: impl Into<String>, flash: Option<&str>) -> Self {
        let PageRequest {
            app,
            generation,
            outer,
            uri,
            ..
        } = req;
        let path = uri.path().trim_start_matches('/');
        let query: Vec<&str> = uri
            .query()
            .unwrap_or_default()
            .split('&')
            .filter(|kv| !kv.is_empty() && !kv.starts_with("flash=") && !kv.starts_with("token="))
            .collect();
        let here = if query.is_empty() {
            path.to_owned()
        } else {
            format!("{path}?{}", query.join("&"))
        };
        let (base, root) = app::links(outer.path(), uri.path());
        Chrome {
            base,
            root,
            title: title.into(),
            place: app.place().to_owned(),
            flash: flash.and_then(|k| app.take_flash(k)),
            actions: app.actions(),
            csrf: app.csrf().to_owned(),
            here,
            generation: *generation,
        }
    }
}

/// A rendered page, with the status `status`. The templates escape markup; what is left of
/// the queue's control characters (none is the templates' own) shows as its picture (`␇`).
fn render(status: StatusCode, t: &impl Template) -> Response {
    match t.render() {
        Ok(html) => (status, Html(visible(html))).into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot render the page: {e}\n"),
        )
            .into_response(),
    }
}

/// `html` with its control characters but newline, tab and carriage return made visible.
fn visible(html: String) -> String {
    let hidden = |c: char| c.is_control() && !matches!(c, '\n' | '\t' | '\r');
    if !html.chars().any(hidden) {
        return html;
    }
    html.chars()
        .map(|c| match c {
            '\u{0}'..='\u{1f}' if hidden(c) => char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'),
            '\u{7f}' => '\u{2421}',
            c if hidden(c) => '\u{fffd}',
            c => c,
        })
        .collect()
}

#[derive(Template)]
#[template(path = "error.html", config = "src/ui/askama.toml")]
struct ErrorPage {
    page: Chrome,
    heading: String,
    message: String,
}

/// Any path the view does not have.
pub(crate) async fn not_found(req: PageRequest) -> Response {
    req.error(&UiError::NotFound("no such page in this hookq view".into()))
}

#[derive(Template)]
#[template(path = "overview.html", config = "src/ui/askama.toml")]
struct OverviewPage {
    page: Chrome,
    o: model::Overview,
    chart: String,
    now: i64,
}

/// `/`: the queue at a glance.
pub(crate) async fn overview(req: PageRequest) -> Response {
    let app = &req.app;
    let now = now_ms();
    match app.db().call(move |db| model::overview(db, now)).await {
        Ok(o) => {
            let chart = chart::svg(&o.hours);
            let page = req.chrome("overview");
            render(
                StatusCode::OK,
                &OverviewPage {
                    page,
                    o,
                    chart,
                    now,
                },
            )
        }
        Err(e) => req.error(&e),
    }
}

#[derive(Template)]
#[template(path = "pending.html", config = "src/ui/askama.toml")]
struct PendingPage {
    page: Chrome,
    points: Vec<(&'static str, bool)>,
    filter: PendingFilter,
    listing: model::Listing,
    next: Option<String>,
    first: String,
    now: i64,
}

/// `/pending`: pending points, oldest first, a page at a time.
pub(crate) async fn pending(req: PageRequest) -> Response {
    let (app, raw) = (&req.app, &req.raw);
    let filter = match raw.pending() {
        Ok(f) => f,
        Err(e) => return req.error(&e),
    };
    let f = filter.clone();
    match app.db().call(move |db| model::pending(db, &f)).await {
        Ok(listing) => {
            let pairs = |after: Option<i64>| {
                fmt::query(&[
                    ("task", filter.task.as_ref().map(|t| t.to_string())),
                    ("point", filter.point.map(|p| p.to_string())),
                    ("after", after.map(|a| a.to_string())),
                ])
            };
            let next = listing
                .more
                .then(|| listing.pending.last().map(|p| format!("pending{}", pairs(Some(p.id)))))
                .flatten();
            let first = format!("pending{}", pairs(None));
            let page = req.chrome("pending");
            render(
                StatusCode::OK,
                &PendingPage {
                    page,
                    points: fmt::choices(&fmt::points(), filter.point.map(|p| p.as_str())),
                    filter,
                    listing,
                    next,
                    first,
                    now: now_ms(),
                },
            )
        }
        Err(e) => req.error(&e),
    }
}

#[derive(Template)]
#[template(path = "history.html", config = "src/ui/askama.toml")]
struct HistoryPage {
    page: Chrome,
    points: Vec<(&'static str, bool)>,
    outcomes: Vec<(&'static str, bool)>,
    filter: HistoryFilter,
    history: Vec<HistoryRow>,
    postgres: bool,
    next: Option<String>,
    first: String,
}

/// `/history`: what ran, newest first, a page at a time.
pub(crate) async fn history(req: PageRequest) -> Response {
    let (app, raw) = (&req.app, &req.raw);
    let filter = match raw.history() {
        Ok(f) => f,
        Err(e) => return req.error(&e),
    };
    let f = filter.clone();
    match app.db().call(move |db| model::history(db, &f)).await {
        Ok((history, more)) => {
            let pairs = |before: Option<i64>| {
                fmt::query(&[
                    ("task", filter.task.as_ref().map(|t| t.to_string())),
                    ("point", filter.point.map(|p| p.to_string())),
                    ("outcome", filter.outcome.map(|o| o.as_str().to_owned())),
                    ("host", filter.host.clone()),
                    ("before", before.map(|b| b.to_string())),
                ])
            };
            let next = more
                .then(|| history.last().map(|h| format!("history{}", pairs(Some(h.id)))))
                .flatten();
            let first = format!("history{}", pairs(None));
            let page = req.chrome("history");
            render(
                StatusCode::OK,
                &HistoryPage {
                    page,
                    points: fmt::choices(&fmt::points(), filter.point.map(|p| p.as_str())),
                    outcomes: fmt::choices(&fmt::OUTCOMES, filter.outcome.map(|o| o.as_str())),
                    filter,
                    history,
                    postgres: app.is_postgres(),
                    next,
                    first,
                },
            )
        }
        Err(e) => req.error(&e),
    }
}

/// The task a path names, or the 404 of one that cannot be a task id.
pub(crate) fn task_id(id: &str) -> Result<TaskId, UiError> {
    TaskId::new(id).map_err(|e| UiError::NotFound(format!("no such task: {e}")))
}

#[derive(Template)]
#[template(path = "task.html", config = "src/ui/askama.toml")]
struct TaskPage {
    page: Chrome,
    t: crate::queue::TaskShown,
    logs: Vec<LogFile>,
    shared_logs: Option<&'static str>,
    postgres: bool,
    now: i64,
}

/// `/task/{id}`: a task's phase, pending points, history and logs.
pub(crate) async fn task(req: PageRequest, Path(id): Path<String>) -> Response {
    let app = &req.app;
    let read = async {
        let id = task_id(&id)?;
        app.db()
            .call(move |db| {
                let shown = model::task(db, &id)?;
                let logs = db.log_files(&id, None)?;
                match shown {
                    Some(t) => Ok((t, logs, db.shared_logs())),
                    None => Err(UiError::NotFound(format!("no task {id} in {}", db.place()))),
                }
            })
            .await
    };
    match read.await {
        Ok((t, logs, shared_logs)) => {
            let page = req.chrome(format!("task {}", t.task.id));
            render(
                StatusCode::OK,
                &TaskPage {
                    page,
                    t,
                    logs,
                    shared_logs,
                    postgres: app.is_postgres(),
                    now: now_ms(),
                },
            )
        }
        Err(e) => req.error(&e),
    }
}

#[derive(Template)]
#[template(path = "log.html", config = "src/ui/askama.toml")]
struct LogPage {
    page: Chrome,
    task: String,
    file: String,
    /// The host the log is on, when it is not this one.
    elsewhere: Option<String>,
    /// The log is gone: history rows name it, but it was pruned.
    pruned: bool,
    /// The log's text, rendered (escaped) by [`ansi::render`].
    html: String,
    skipped: u64,
    shown: u64,
    /// Where the text shown ends: a live tail reads on from here.
    end: u64,
    /// The style in effect there (its classes), for the tail to go on in.
    style: String,
}

/// What a log page shows.
pub(crate) enum LogText {
    /// The log's end, read here.
    Here {
        /// The bytes shown, from a line's or a character's start.
        bytes: Vec<u8>,
        /// How many bytes of the file come before them.
        skipped: u64,
    },
    /// The log is on another host: the one that ran the hook.
    Elsewhere(String),
    /// The task's history rows name the log, and it is gone: pruned.
    Pruned,
}

/// The log `file` of task `id` as a page shows it: found among the task's log files on this
/// host (no part of the request becomes a path), else, on a queue other hosts drain, the host
/// whose history names it.
pub(crate) fn read_log(
    db: &mut Queue,
    id: &TaskId,
    file: &str,
) -> Result<LogText, UiError> {
    let logs = db.log_files(id, None)?;
    if let Some(log) = logs.iter().find(|l| l.name() == file) {
        match read_end(&log.path, LOG_SHOWN) {
            Ok((bytes, skipped)) => return Ok(LogText::Here { bytes, skipped }),
            // Pruned since it was listed.
            Err(UiError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Ok(LogText::Pruned);
            }
            Err(e) => return Err(e),
        }
    }
    let named = |p: &std::path::PathBuf| p.file_name().is_some_and(|n| n == file);
    if db.pruned_logs(id)?.iter().any(named) {
        return Ok(LogText::Pruned);
    }
    // A queue many hosts drain: a run's log is on the host that ran it, which its history
    // row names.
    if db.is_postgres() {
        let here = this_host();
        let rows = db.history(&HistoryFilter {
            task: Some(id.clone()),
            limit: 1000,
            ..HistoryFilter::default()
        })?;
        if let Some(host) = rows
            .iter()
            .filter(|h| fmt::log_name(h).as_deref() == Some(file))
            .find_map(fmt::host)
            .filter(|h| *h != here)
        {
            return Ok(LogText::Elsewhere(host));
        }
    }
    Err(UiError::NotFound(format!(
        "no hook log {file} of task {id} on this host"
    )))
}

/// This machine's name, as a PostgreSQL queue's history rows name the host that ran them.
fn this_host() -> String {
    #[cfg(feature = "postgres")]
    return crate::queue::pg::lock::host_name();
    #[cfg(not(feature = "postgres"))]
    String::new()
}

/// The last `max` bytes of the file at `path`, from the first line's start among their first
/// [`LINE_SEARCH`] bytes, else from their first character's start; and how many bytes of the
/// file come before them.
fn read_end(path: &std::path::Path, max: u64) -> Result<(Vec<u8>, u64), UiError> {
    let io = |source| UiError::Io {
        path: path.to_owned(),
        source,
    };
    let mut f = std::fs::File::open(path).map_err(io)?;
    let len = f.metadata().map_err(io)?.len();
    let from = len.saturating_sub(max);
    f.seek(SeekFrom::Start(from)).map_err(io)?;
    let mut bytes = Vec::new();
    f.take(max).read_to_end(&mut bytes).map_err(io)?;
    if from == 0 {
        return Ok((bytes, 0));
    }
    let start = match bytes
        .iter()
        .take(LINE_SEARCH)
        .position(|&b| b == b'\n')
    {
        Some(nl) => nl + 1,
        // A long line: its end is shown, from a character's start (past UTF-8 continuation
        // bytes, of which a character has three at most).
        None => bytes
            .iter()
            .take(3)
            .take_while(|&&b| (0x80..0xc0).contains(&b))
            .count(),
    };
    bytes.drain(..start);
    Ok((bytes, from + start as u64))
}

/// `/task/{id}/log/{file}`: a hook log's text.
pub(crate) async fn log(req: PageRequest, Path((id, file)): Path<(String, String)>) -> Response {
    let app = &req.app;
    let read = async {
        let tid = task_id(&id)?;
        let f = file.clone();
        app.db().call(move |db| read_log(db, &tid, &f)).await
    };
    let page = || req.chrome(format!("{id} {file}"));
    match read.await {
        Ok(LogText::Here { bytes, skipped }) => {
            // An incomplete end (a character or an escape sequence the hook is writing) is
            // left for the tail, which reads on from `end` in `style`.
            let shown = ansi::render(&bytes, Style::default());
            render(
                StatusCode::OK,
                &LogPage {
                    page: page(),
                    task: id.clone(),
                    file: file.clone(),
                    elsewhere: None,
                    pruned: false,
                    html: shown.html,
                    skipped,
                    shown: shown.used as u64,
                    end: skipped + shown.used as u64,
                    style: shown.style.class(),
                },
            )
        }
        Ok(LogText::Pruned) => render(
            StatusCode::OK,
            &LogPage {
                page: page(),
                task: id.clone(),
                file: file.clone(),
                elsewhere: None,
                pruned: true,
                html: String::new(),
                skipped: 0,
                shown: 0,
                end: 0,
                style: String::new(),
            },
        ),
        Ok(LogText::Elsewhere(host)) => render(
            StatusCode::OK,
            &LogPage {
                page: page(),
                task: id.clone(),
                file: file.clone(),
                pruned: false,
                elsewhere: Some(host),
                html: String::new(),
                skipped: 0,
                shown: 0,
                end: 0,
                style: String::new(),
            },
        ),
        Err(e) => req.error(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_show_as_pictures() {
        assert_eq!(visible("a\u{7}b\u{1b}\u{7f}\u{85}\n\t\r".into()), "a\u{2407}b\u{241b}\u{2421}\u{fffd}\n\t\r");
        assert_eq!(visible("plain <p>".into()), "plain <p>");
    }

    #[test]
    fn a_long_log_shows_its_end_from_a_line_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.log");
        std::fs::write(&path, "first line\nsecond\nthird\n").unwrap();
        let (bytes, skipped) = read_end(&path, 100).unwrap();
        assert_eq!((&bytes[..], skipped), (&b"first line\nsecond\nthird\n"[..], 0));
        let (bytes, skipped) = read_end(&path, 10).unwrap();
        assert_eq!((&bytes[..], skipped), (&b"third\n"[..], 18));
    }

    #[test]
    fn a_long_line_shows_its_end_from_a_character_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.log");
        // One line longer than the search for a line's start: its end is shown, not only
        // what follows it.
        let line = "ü".repeat(LINE_SEARCH);
        std::fs::write(&path, format!("{line}\nend\n")).unwrap();
        let max = LINE_SEARCH as u64 + 6;
        let (bytes, skipped) = read_end(&path, max).unwrap();
        let len = 2 * LINE_SEARCH as u64 + 5;
        assert_eq!(skipped, len - max + 1, "one continuation byte left out");
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.starts_with("üü") && text.ends_with("ü\nend\n"), "{text:?}");
        assert_eq!(text.len() as u64, max - 1);
    }
}
