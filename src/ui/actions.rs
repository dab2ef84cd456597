//! The actions (`hookq ui --actions`): retry a history row, drop a pending point, pause and
//! resume the queue. Each is a POST carrying the server's form token, from no other site than
//! the server's own (its `Origin`, or `Referer`, is checked first: `auth::same_site_forms`), and
//! answers 303 back to the page it came from, which then says what was done.

use axum::Form;
use axum::extract::{OriginalUri, Path, State};
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::queue::{Queue, said};

use super::app::{self, App};
use super::auth;
use super::error::UiError;

/// An action form's fields.
#[derive(Debug, Deserialize)]
pub(crate) struct ActionForm {
    /// The server's form token.
    csrf: Option<String>,
    /// The page to go back to, relative to the view's root.
    back: Option<String>,
}

/// Runs action `f` when the form carries this server's token, then sends the browser back
/// with what `f` said.
async fn act<F>(app: App, (outer, uri): (Uri, Uri), form: ActionForm, what: String, f: F) -> Response
where
    F: FnOnce(&mut Queue) -> Result<String, UiError> + Send + 'static,
{
    let given = form.csrf.as_deref().unwrap_or_default();
    if !auth::same(given.as_bytes(), app.csrf().as_bytes()) {
        return (
            StatusCode::FORBIDDEN,
            "this form is not from this hookq ui (its csrf token is missing or wrong): reload the page and try again\n",
        )
            .into_response();
    }
    let message = match app.db().call(f).await {
        Ok(m) => m,
        Err(e) => format!("could not {what}: {e}"),
    };
    let key = app.leave_flash(message);
    let mut back = back(form.back.as_deref().unwrap_or_default()).to_owned();
    let (_, root) = app::links(outer.path(), uri.path());
    if back.is_empty() && root != "./" {
        back = root;
    }
    let sep = if back.contains('?') { '&' } else { '?' };
    let location = format!("{}{back}{sep}flash={key}", app::base(uri.path()));
    (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response()
}

/// `back` when it is one of the view's own pages (relative to its root), else the overview's
/// `""`: the form's field never sends the browser elsewhere.
fn back(back: &str) -> &str {
    let (path, _) = back.split_once('?').unwrap_or((back, ""));
    let page = path.is_empty()
        || path == "pending"
        || path == "history"
        || path.strip_prefix("task/").is_some_and(|rest| {
            !rest.is_empty()
                && rest
                    .split('/')
                    .all(|seg| !seg.is_empty() && seg != "." && seg != "..")
        });
    let plain = back.len() <= 2048
        && !back.contains(['\\', ':', '#'])
        && !back.chars().any(char::is_control)
        && !back.contains("//");
    if page && plain { back } else { "" }
}

/// `POST /action/retry/{history_id}`.
pub(crate) async fn retry(
    State(app): State<App>,
    OriginalUri(outer): OriginalUri,
    uri: Uri,
    Path(id): Path<i64>,
    Form(form): Form<ActionForm>,
) -> Response {
    act(app, (outer, uri), form, format!("retry history row {id}"), move |db| {
        let o = db.retry(id)?;
        Ok(said::retried(id, &o))
    })
    .await
}

/// `POST /action/drop/{occurrence}`.
pub(crate) async fn drop(
    State(app): State<App>,
    OriginalUri(outer): OriginalUri,
    uri: Uri,
    Path(id): Path<i64>,
    Form(form): Form<ActionForm>,
) -> Response {
    act(app, (outer, uri), form, format!("drop occurrence {id}"), move |db| {
        let d = db.drop_occurrence(id)?;
        let mut message = said::dropped(id, &d);
        if let Some(note) = d.note {
            message.push_str("; ");
            message.push_str(&note);
        }
        Ok(message)
    })
    .await
}

/// `POST /action/pause`.
pub(crate) async fn pause(
    State(app): State<App>,
    OriginalUri(outer): OriginalUri,
    uri: Uri,
    Form(form): Form<ActionForm>,
) -> Response {
    act(app, (outer, uri), form, "pause the queue".into(), |db| {
        let p = db.pause()?;
        Ok(said::paused(&p, db.place()))
    })
    .await
}

/// `POST /action/resume`.
pub(crate) async fn resume(
    State(app): State<App>,
    OriginalUri(outer): OriginalUri,
    uri: Uri,
    Form(form): Form<ActionForm>,
) -> Response {
    act(app, (outer, uri), form, "resume the queue".into(), |db| {
        let p = db.resume()?;
        Ok(said::resumed(p.as_ref(), db.place()))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_names_a_page_of_the_view_or_the_overview() {
        for ok in [
            "",
            "pending",
            "pending?task=t1&after=3",
            "history?outcome=failed",
            "task/t1",
            "task/t1/log/after_merge-01.log",
        ] {
            assert_eq!(back(ok), ok);
        }
        for bad in [
            "//evil.example/",
            "https://evil.example/",
            "/pending",
            "task/../../x",
            "task/",
            "task//x",
            "javascript:alert(1)",
            "pending\r\nSet-Cookie: x=1",
            "metrics",
            "pending#x",
            "\\\\evil",
        ] {
            assert_eq!(back(bad), "", "{bad:?}");
        }
    }
}
