//! The query parameters of the listings, checked: empty means unset, numbers must be numbers,
//! a point or an outcome must be one hookq has, and no value is longer than an id can be.

use std::convert::Infallible;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use crate::queue::phase::Point;
use crate::queue::ids::TaskId;
use crate::queue::model::{Outcome, HistoryFilter, PendingFilter};

use super::error::UiError;
use super::model::PAGE;

/// The longest filter value taken (ids are at most 128 characters).
const MAX_VALUE: usize = 256;

/// A listing's query string as sent: every parameter optional text, the last of a repeated
/// one counting. Taken from any query string: what is wrong with a value is told by the
/// listing's filter ([`Raw::pending`], [`Raw::history`]).
#[derive(Debug, Default)]
pub(crate) struct Raw {
    task: Option<String>,
    point: Option<String>,
    outcome: Option<String>,
    host: Option<String>,
    after: Option<String>,
    before: Option<String>,
    /// The key of a flash message an action left for this page.
    pub(crate) flash: Option<String>,
}

impl Raw {
    /// The parameters of `query` (`task=t1&after=3`); unknown ones are left out.
    pub(crate) fn parse(query: &str) -> Raw {
        let mut r = Raw::default();
        for pair in query.split('&') {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = Some(super::auth::percent_decode(v));
            match super::auth::percent_decode(k).as_str() {
                "task" => r.task = v,
                "point" => r.point = v,
                "outcome" => r.outcome = v,
                "host" => r.host = v,
                "after" => r.after = v,
                "before" => r.before = v,
                "flash" => r.flash = v,
                _ => {}
            }
        }
        r
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Raw {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Raw, Infallible> {
        Ok(Raw::parse(parts.uri.query().unwrap_or_default()))
    }
}

fn text(name: &str, v: &Option<String>) -> Result<Option<String>, UiError> {
    match v.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) if v.len() > MAX_VALUE => Err(UiError::BadRequest(format!(
            "{name}: longer than {MAX_VALUE} bytes"
        ))),
        Some(v) => Ok(Some(v.to_owned())),
    }
}

fn number(name: &str, v: &Option<String>) -> Result<Option<i64>, UiError> {
    text(name, v)?
        .map(|v| {
            v.parse::<i64>()
                .map_err(|_| UiError::BadRequest(format!("{name}: not a number")))
        })
        .transpose()
}

fn point(v: &Option<String>) -> Result<Option<Point>, UiError> {
    text("point", v)?
        .map(|p| {
            p.parse::<Point>()
                .map_err(|e| UiError::BadRequest(format!("point: {e}")))
        })
        .transpose()
}

/// A task filter: a task id, so that one that cannot be a task's is told rather than shown as
/// an empty listing.
fn task(v: &Option<String>) -> Result<Option<TaskId>, UiError> {
    text("task", v)?
        .map(|t| TaskId::new(t).map_err(|e| UiError::BadRequest(format!("task: {e}"))))
        .transpose()
}

/// An outcome filter: one of [`OUTCOMES`](super::fmt::OUTCOMES), so that a misspelt one is
/// told rather than shown as an empty history.
fn outcome(v: &Option<String>) -> Result<Option<Outcome>, UiError> {
    let Some(o) = text("outcome", v)? else {
        return Ok(None);
    };
    o.parse::<Outcome>().map(Some).map_err(|_| {
        UiError::BadRequest(format!(
            "outcome: unknown outcome {o:?} (known: {})",
            super::fmt::OUTCOMES.join(", ")
        ))
    })
}

impl Raw {
    /// The pending listing's filter.
    pub(crate) fn pending(&self) -> Result<PendingFilter, UiError> {
        Ok(PendingFilter {
            task: task(&self.task)?,
            point: point(&self.point)?,
            after: number("after", &self.after)?.unwrap_or(0),
            limit: PAGE,
        })
    }

    /// The history listing's filter.
    pub(crate) fn history(&self) -> Result<HistoryFilter, UiError> {
        Ok(HistoryFilter {
            task: task(&self.task)?,
            point: point(&self.point)?,
            outcome: outcome(&self.outcome)?,
            host: text("host", &self.host)?,
            before: number("before", &self.before)?,
            occurrence: None,
            limit: PAGE,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(pairs: &[(&str, &str)]) -> Raw {
        let mut r = Raw::default();
        for (k, v) in pairs {
            let v = Some((*v).to_owned());
            match *k {
                "task" => r.task = v,
                "point" => r.point = v,
                "outcome" => r.outcome = v,
                "after" => r.after = v,
                "before" => r.before = v,
                _ => unreachable!("{k}"),
            }
        }
        r
    }

    #[test]
    fn query_strings_are_decoded_and_the_last_counts() {
        let r = Raw::parse("task=a&task=t%201&point=after_merge&x=1&after&flash=3&=&&%zz=q+r");
        assert_eq!(r.task.as_deref(), Some("t 1"));
        assert_eq!(r.point.as_deref(), Some("after_merge"));
        assert_eq!(r.after.as_deref(), Some(""));
        assert_eq!(r.flash.as_deref(), Some("3"));
        assert_eq!(r.outcome, None);
        let refused = r.pending().unwrap_err().to_string();
        assert!(refused.contains("task: invalid task id"), "{refused}");
        let p = Raw::parse("task=a&task=t-1&after=").pending().unwrap();
        assert_eq!((p.task.as_ref().map(|t| t.as_str()), p.after), (Some("t-1"), 0));
    }

    #[test]
    fn empty_is_unset() {
        let p = raw(&[("task", ""), ("point", " "), ("after", "")])
            .pending()
            .unwrap();
        assert_eq!((p.task, p.point, p.after), (None, None, 0));
    }

    #[test]
    fn bad_values_are_refused() {
        assert!(raw(&[("after", "x")]).pending().is_err());
        assert!(raw(&[("before", "1e3")]).history().is_err());
        assert!(raw(&[("point", "after_mrge")]).pending().is_err());
        assert!(raw(&[("task", &"t".repeat(300))]).history().is_err());
        let bogus = raw(&[("outcome", "bogus")]).history().unwrap_err().to_string();
        assert!(bogus.contains("known: ok, failed, timed_out"), "{bogus}");
        let h = raw(&[("point", "after_merge"), ("before", "12"), ("outcome", "ok")])
            .history()
            .unwrap();
        assert_eq!(h.point.map(|p| p.as_str()), Some("after_merge"));
        assert_eq!((h.before, h.outcome.map(|o| o.as_str())), (Some(12), Some("ok")));
    }
}
