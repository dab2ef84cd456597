//! The outcome ledger: one row per evaluated hook, in the order they were evaluated. Human
//! output and JSON are both views of it. A row names its hook by location and source, never by
//! its command text.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use super::discovery::SourcedCommand;

/// How an evaluated hook ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// It ran and exited 0.
    Succeeded,
    /// It was not run; the reason says why (an earlier failure, a stop).
    Skipped(String),
    /// It could not be run (its interpreter or working directory could not be started).
    FailedValidation(String),
    /// It ran past its timeout and was ended.
    TimedOut,
    /// It exited non-zero, or a signal ended it (then `code` is 128 + the signal, the shell's
    /// convention, and `signal` is set).
    ExitedNonzero {
        /// The exit code.
        code: i32,
        /// The signal that ended it, if one did.
        signal: Option<i32>,
    },
}

impl Status {
    /// The `status` value.
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Succeeded => "succeeded",
            Status::Skipped(_) => "skipped",
            Status::FailedValidation(_) => "failed-validation",
            Status::TimedOut => "timed-out",
            Status::ExitedNonzero { .. } => "exited-nonzero",
        }
    }

    /// Whether this is a failure.
    pub fn failed(&self) -> bool {
        !matches!(self, Status::Succeeded | Status::Skipped(_))
    }

    /// A short human description: `exited with 3`, `killed by signal 2`, `timed out`.
    pub fn describe(&self) -> String {
        match self {
            Status::Succeeded => "succeeded".into(),
            Status::Skipped(why) => format!("skipped: {why}"),
            Status::FailedValidation(why) => format!("could not run: {why}"),
            Status::TimedOut => "timed out".into(),
            Status::ExitedNonzero {
                signal: Some(s), ..
            } => format!("ended by signal {s}"),
            Status::ExitedNonzero { code, .. } => format!("exited with {code}"),
        }
    }
}

/// One evaluated hook.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The hook.
    pub hook: SourcedCommand,
    /// How it ended.
    pub status: Status,
    /// How long it ran (zero when it did not).
    pub duration: Duration,
    /// Its working directory (`None` when it did not run).
    pub cwd: Option<PathBuf>,
}

/// An outcome as JSON shows it (`data.hookOutcomes`, `error.details.hookOutcomes`): the
/// hook's identity, as a preview shows it, and how it ended.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutcomeJson {
    /// Which hook, from where (the same fields as a preview).
    #[serde(flatten)]
    pub hook: PreviewJson,
    /// The status.
    pub status: &'static str,
    /// The exit code, for `exited-nonzero`.
    pub exit_code: Option<i32>,
    /// The signal, for `exited-nonzero` ended by one.
    pub signal: Option<i32>,
    /// Why, for `skipped` and `failed-validation`.
    pub reason: Option<String>,
    /// Milliseconds it ran.
    pub duration_ms: u64,
}

/// A hook as a preview shows it (`remove --dry-run`, the inspector): the outcome's identity
/// fields without a status.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreviewJson {
    /// `pre-create`, …
    pub lifecycle: &'static str,
    /// `workspace`, …
    pub scope: &'static str,
    /// The target repository, `null` for a workspace create hook.
    pub target_repository: Option<String>,
    /// The logical hook name.
    pub hook_name: String,
    /// `inline-config` or `native-file`.
    pub source_kind: &'static str,
    /// `workspace`, `repository` or `user`.
    pub source_owner_kind: &'static str,
    /// The owner's name, `null` for the user.
    pub source_owner_name: Option<String>,
    /// The script's absolute path, `null` for an inline source.
    pub source_script_path: Option<String>,
}

impl PreviewJson {
    /// The preview of `hook`.
    pub fn of(hook: &SourcedCommand) -> Self {
        let owner = hook.source.owner();
        PreviewJson {
            lifecycle: hook.lifecycle.as_str(),
            scope: hook.scope.as_str(),
            target_repository: hook.target.clone(),
            hook_name: hook.name.clone(),
            source_kind: hook.source.kind(),
            source_owner_kind: owner.kind.as_str(),
            source_owner_name: owner.name.clone(),
            source_script_path: hook
                .source
                .script_path()
                .map(|p| p.to_string_lossy().into_owned()),
        }
    }
}

impl Outcome {
    /// The row as JSON.
    pub fn to_json(&self) -> OutcomeJson {
        let (exit_code, signal, reason) = match &self.status {
            Status::ExitedNonzero { code, signal } => (Some(*code), *signal, None),
            Status::Skipped(r) | Status::FailedValidation(r) => (None, None, Some(r.clone())),
            _ => (None, None, None),
        };
        OutcomeJson {
            hook: PreviewJson::of(&self.hook),
            status: self.status.as_str(),
            exit_code,
            signal,
            reason,
            duration_ms: self.duration.as_millis().try_into().unwrap_or(u64::MAX),
        }
    }
}

/// An outcome serializes as its JSON row ([`OutcomeJson`]).
impl Serialize for Outcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

/// Every evaluated hook of one command. Serializes as the array of its rows.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(transparent)]
pub struct Ledger {
    /// The rows, in evaluation order.
    pub outcomes: Vec<Outcome>,
}

/// The ledger's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Counts {
    /// Rows that succeeded.
    pub succeeded: usize,
    /// Rows skipped.
    pub skipped: usize,
    /// Rows that failed (any failure status).
    pub failed: usize,
}

impl Ledger {
    /// Adds a row.
    pub fn push(&mut self, o: Outcome) {
        self.outcomes.push(o);
    }

    /// Records `hook` as skipped for `why`.
    pub fn skip(&mut self, hook: &SourcedCommand, why: &str) {
        self.push(Outcome {
            hook: hook.clone(),
            status: Status::Skipped(why.into()),
            duration: Duration::ZERO,
            cwd: None,
        });
    }

    /// Succeeded, skipped and failed counts.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for o in &self.outcomes {
            match o.status {
                Status::Succeeded => c.succeeded += 1,
                Status::Skipped(_) => c.skipped += 1,
                _ => c.failed += 1,
            }
        }
        c
    }

    /// The rows as JSON.
    pub fn to_json(&self) -> Vec<OutcomeJson> {
        self.outcomes.iter().map(Outcome::to_json).collect()
    }

    /// Whether any row failed.
    pub fn any_failed(&self) -> bool {
        self.outcomes.iter().any(|o| o.status.failed())
    }

    /// Whether any row timed out.
    pub fn any_timed_out(&self) -> bool {
        self.outcomes.iter().any(|o| o.status == Status::TimedOut)
    }

    /// The first failed row.
    pub fn first_failure(&self) -> Option<&Outcome> {
        self.outcomes.iter().find(|o| o.status.failed())
    }
}

/// Where a row's hook runs, for a human line: `post-create.web (repository, web)`.
pub fn label(h: &SourcedCommand) -> String {
    match &h.target {
        Some(t) => format!("{} ({}, {t})", h.name, h.scope),
        None => format!("{} ({})", h.name, h.scope),
    }
}
