//! Phases (`<state>.<phase>`) and the hook points they fire.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// Why a phase was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid phase {shown}: {why}")]
pub struct PhaseError {
    shown: String,
    why: &'static str,
}

const MAX_PART: usize = 64;

/// A task's `<state>.<phase>`, both parts matching `[a-z][a-z0-9_]*`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Phase {
    text: String,
    dot: usize,
}

impl Phase {
    /// Parses `<state>.<phase>`.
    pub fn new(s: &str) -> Result<Self, PhaseError> {
        let refuse = |why| {
            let cut: String = s.chars().take(40).collect();
            let more = if cut.len() < s.len() { " (cut)" } else { "" };
            Err(PhaseError {
                shown: format!("{cut:?}{more}"),
                why,
            })
        };
        let Some((state, phase)) = s.split_once('.') else {
            return refuse("expected `<state>.<phase>`, like `review.awaiting_human`");
        };
        for part in [state, phase] {
            if part.is_empty() || part.len() > MAX_PART {
                return refuse("each part must be 1 to 64 characters");
            }
            let mut bytes = part.bytes();
            if !bytes.next().is_some_and(|b| b.is_ascii_lowercase()) {
                return refuse("each part must start with a lowercase letter a-z");
            }
            if !bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') {
                return refuse("each part may only hold a-z, 0-9 and `_`");
            }
        }
        Ok(Self {
            text: s.to_owned(),
            dot: state.len(),
        })
    }

    /// The state, before the dot.
    pub fn state(&self) -> &str {
        &self.text[..self.dot]
    }

    /// The phase within the state, after the dot.
    pub fn phase(&self) -> &str {
        &self.text[self.dot + 1..]
    }

    /// The whole `<state>.<phase>`.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The hook point that a write moving a task into this phase fires, if any.
    pub fn point(&self) -> Option<Point> {
        match (self.state(), self.phase()) {
            ("done", "merged") => Some(Point::AfterMerge),
            ("failed", _) => Some(Point::AfterFail),
            ("review", "rework_pending") => Some(Point::AfterRework),
            ("review", "awaiting_human") => Some(Point::AfterAwaitingHuman),
            ("todo", "proposed") => Some(Point::AfterProposed),
            _ => None,
        }
    }

    /// Whether a task in this phase is finished (`done.*` or `failed.*`); `plan cancel` leaves
    /// finished tasks alone.
    pub fn is_finished(&self) -> bool {
        matches!(self.state(), "done" | "failed")
    }
}

impl FromStr for Phase {
    type Err = PhaseError;
    fn from_str(s: &str) -> Result<Self, PhaseError> {
        Self::new(s)
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A hook point: the names are fixed by the binary, only the command lines come from config.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Point {
    /// A task entered `done.merged`.
    AfterMerge,
    /// A task entered any `failed.*` phase.
    AfterFail,
    /// A task entered `review.rework_pending`.
    AfterRework,
    /// A task entered `review.awaiting_human`.
    AfterAwaitingHuman,
    /// A task entered (or was created in) `todo.proposed`.
    AfterProposed,
}

impl Point {
    /// Every point, in the order config and listings show them.
    pub const ALL: [Point; 5] = [
        Point::AfterMerge,
        Point::AfterFail,
        Point::AfterRework,
        Point::AfterAwaitingHuman,
        Point::AfterProposed,
    ];

    /// The point's name, as in `config.toml` and `ARC_HOOK`.
    pub fn as_str(self) -> &'static str {
        match self {
            Point::AfterMerge => "after_merge",
            Point::AfterFail => "after_fail",
            Point::AfterRework => "after_rework",
            Point::AfterAwaitingHuman => "after_awaiting_human",
            Point::AfterProposed => "after_proposed",
        }
    }
}

/// An unknown point name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown hook point {0:?} (known: after_merge, after_fail, after_rework, after_awaiting_human, after_proposed)"
)]
pub struct UnknownPoint(pub String);

impl FromStr for Point {
    type Err = UnknownPoint;
    fn from_str(s: &str) -> Result<Self, UnknownPoint> {
        Point::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| UnknownPoint(s.to_owned()))
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for Point {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Point {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(s: &str) -> Option<Point> {
        Phase::new(s).unwrap().point()
    }

    #[test]
    fn spec_table() {
        assert_eq!(point("done.merged"), Some(Point::AfterMerge));
        assert_eq!(point("failed.cancelled"), Some(Point::AfterFail));
        assert_eq!(point("failed.gate_failed"), Some(Point::AfterFail));
        assert_eq!(point("review.rework_pending"), Some(Point::AfterRework));
        assert_eq!(
            point("review.awaiting_human"),
            Some(Point::AfterAwaitingHuman)
        );
        assert_eq!(point("todo.proposed"), Some(Point::AfterProposed));
        for none in [
            "todo.ready",
            "done.abandoned",
            "review.pending",
            "running.gate",
        ] {
            assert_eq!(point(none), None, "{none}");
        }
    }

    #[test]
    fn parts() {
        let p = Phase::new("review.awaiting_human").unwrap();
        assert_eq!((p.state(), p.phase()), ("review", "awaiting_human"));
        assert!(Phase::new("failed.x").unwrap().is_finished());
        assert!(!p.is_finished());
    }

    #[test]
    fn refuses_malformed() {
        for bad in [
            "",
            "done",
            ".merged",
            "done.",
            "Done.merged",
            "done.Merged",
            "done.merged.x",
            "1done.x",
            "done.9",
            "done-x.y",
            "done .merged",
            "dоne.merged",
            "done.merged\n",
        ] {
            assert!(Phase::new(bad).is_err(), "{bad:?}");
        }
        let err = Phase::new(&format!("a.{}", "b".repeat(65)))
            .unwrap_err()
            .to_string();
        assert!(err.contains("(cut)") && err.contains("1 to 64"), "{err}");
        assert!(Phase::new(&format!("a.{}", "b".repeat(64))).is_ok());
    }

    #[test]
    fn point_names_round_trip() {
        for p in Point::ALL {
            assert_eq!(p.as_str().parse::<Point>().unwrap(), p);
        }
        assert!("after_mrge".parse::<Point>().is_err());
    }
}
