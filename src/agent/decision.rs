//! A hook's outcome as data, and the one pure function that folds the outcomes of an event's
//! hooks into its decision. No I/O here: the runner hands in what each hook did
//! ([`HookRun`]), and everything the host is told follows from that and nothing else.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::claude::unread_keys;
use super::event::Event;
use super::sources::{Layer, kind};
use crate::exec::{Collected, Ending, describe};

/// The most characters of a reason, feedback or message taken from one hook.
pub const REASON_CAP: usize = 2000;

/// How many consecutive continuations may wake the turn; past it a continuation waits for the
/// user instead.
pub const WAKE_BUDGET: u32 = 2;

/// What the host should do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// PreToolUse: run the call (with `tool_input`); PostToolUse: carry on; Stop: open another
    /// turn with `message`.
    Continue,
    /// PreToolUse: do not run the call; `reason` goes to the model.
    Deny,
    /// A hook failed. PreToolUse: the call is denied and the turn ends; PostToolUse: the turn
    /// ends; Stop: the turn ends with a warning.
    Error,
    /// PostToolUse: give `feedback` to the model with the result, and mark the result an error.
    Feedback,
    /// Stop: end the turn normally.
    End,
    /// Stop: a continuation was asked for past the wake budget: show `message` and `notice`,
    /// and wait for the user.
    Wait,
}

/// One hook that ran, as the decision reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookReport {
    /// The layer of its entry.
    pub layer: Layer,
    /// Its entry's index in the event's list.
    pub entry: usize,
    /// Its index in the entry's hooks list.
    pub handler: usize,
    /// The command line.
    pub command: String,
    /// How it ended: `exit 0`, `exit 2`, `timed out (…)`, `killed by signal 9`, …
    pub ending: String,
    /// Wall time from start to reap, in milliseconds.
    pub duration_ms: u64,
    /// The hook that had a hook error: the end of its stderr (the last [`REASON_CAP`]
    /// characters, cleaned as reasons are), which usually says why (`not found`, a traceback).
    /// `None` for every other hook, and when it printed nothing there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
}

/// The answer to one event: what `hookq agent fire` prints and the library returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// The event asked about.
    pub event: Event,
    /// What the host should do.
    pub decision: Verdict,
    /// Why (with `deny` and `error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The text for the model (with PostToolUse's `feedback`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    /// The message that opens the next turn (with Stop's `continue` and `wait`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Why the continuation waits (with Stop's `wait`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    /// PreToolUse: the tool input as the hooks left it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_input: Option<Map<String, Value>>,
    /// PreToolUse: whether `tool_input` differs from the host's, so the host re-validates it
    /// against its permission rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_changed: Option<bool>,
    /// Warnings from this firing (the CLI puts the loading's warnings first).
    pub warnings: Vec<String>,
    /// The hooks that ran, in order.
    pub hooks: Vec<HookReport>,
}

/// What one hook did: where it came from and what the executor collected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookRun {
    /// The layer of its entry.
    pub layer: Layer,
    /// Its entry's index.
    pub entry: usize,
    /// Its handler's index.
    pub handler: usize,
    /// The command line.
    pub command: String,
    /// Its timeout, for messages.
    pub timeout: Duration,
    /// How it ended and what it printed, as the executor collected it.
    pub collected: Collected,
}

/// How a hook ended and what it asked for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    /// Exit 0, with what its stdout asked for (PreToolUse only; the other events ignore it).
    Replied(Reply),
    /// Exit 2, with its stderr as text (`None` when blank).
    Blocked(Option<String>),
    /// A hook error.
    Failed(Failure),
}

/// What an exit-0 PreToolUse hook asked for on stdout.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Reply {
    /// `permissionDecision: "deny"`.
    pub deny: bool,
    /// `hookSpecificOutput.reason`, else the top-level `reason` (non-blank strings only).
    pub reason: Option<String>,
    /// `hookSpecificOutput.updatedInput`.
    pub updated_input: Option<Map<String, Value>>,
    /// What was refused or ignored, for warnings.
    pub notes: Vec<String>,
}

/// Why a hook counts as failed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Failure {
    /// It ended other than with exit 0 or 2: another exit code, a timeout, a signal, a failure
    /// to start.
    Ended(Ending),
    /// PreToolUse: stdout went past the cap, so its answer cannot be read whole.
    StdoutTruncated,
    /// PreToolUse: `updatedInput` was there but not an object.
    UpdatedInputNotObject(&'static str),
}

impl Outcome {
    /// Reads what `run` did, for `event`.
    pub(crate) fn read(event: Event, run: &HookRun) -> Outcome {
        let c = &run.collected;
        match c.ending {
            Ending::Exited(0) if event == Event::PreToolUse => {
                if c.stdout_truncated {
                    Outcome::Failed(Failure::StdoutTruncated)
                } else {
                    read_reply(&c.stdout)
                }
            }
            // Stdout decides nothing here, but a reply written for another agent is named.
            Ending::Exited(0) => Outcome::Replied(Reply {
                notes: if c.stdout_truncated {
                    Vec::new()
                } else {
                    unread_keys_of(event, &c.stdout)
                },
                ..Reply::default()
            }),
            Ending::Exited(2) => Outcome::Blocked(text(&c.stderr)),
            other => Outcome::Failed(Failure::Ended(other)),
        }
    }
}

/// Reads an exit-0 PreToolUse hook's stdout.
fn read_reply(stdout: &[u8]) -> Outcome {
    let mut reply = Reply::default();
    if stdout.iter().all(u8::is_ascii_whitespace) {
        return Outcome::Replied(reply);
    }
    let obj = match serde_json::from_slice::<Value>(stdout) {
        Ok(Value::Object(obj)) => {
            reply.notes = unread_keys(Event::PreToolUse, &obj);
            obj
        }
        Ok(_) => {
            reply
                .notes
                .push("stdout is JSON but not an object; ignored".into());
            return Outcome::Replied(reply);
        }
        Err(_) => {
            reply.notes.push("stdout is not JSON; ignored".into());
            return Outcome::Replied(reply);
        }
    };
    let specific = match obj.get("hookSpecificOutput") {
        None => None,
        Some(Value::Object(s)) => Some(s),
        Some(_) => {
            reply
                .notes
                .push("hookSpecificOutput is not an object; ignored".into());
            None
        }
    };
    let Some(specific) = specific else {
        return Outcome::Replied(reply);
    };
    match specific.get("permissionDecision") {
        None => {}
        Some(Value::String(d)) if d == "deny" => reply.deny = true,
        Some(Value::String(d)) if d == "allow" || d == "ask" => reply.notes.push(format!(
            "permissionDecision {d:?} refused: a hook can only deny, never widen what the host allows"
        )),
        // The value itself is the hook's output, which reaches the host only as a reason: the
        // warning says what kind of value it was, not what it said.
        Some(Value::String(_)) => reply.notes.push(
            "permissionDecision is a string other than \"deny\", \"allow\" or \"ask\"; ignored".into(),
        ),
        Some(other) => reply.notes.push(format!(
            "permissionDecision is {}, not \"deny\"; ignored",
            kind(other)
        )),
    }
    let reason_of = |v: Option<&Value>| match v {
        Some(Value::String(s)) => text(s.as_bytes()),
        _ => None,
    };
    reply.reason = reason_of(specific.get("reason")).or_else(|| reason_of(obj.get("reason")));
    match specific.get("updatedInput") {
        None => {}
        Some(Value::Object(input)) => reply.updated_input = Some(input.clone()),
        Some(other) => {
            return Outcome::Failed(Failure::UpdatedInputNotObject(kind(other)));
        }
    }
    Outcome::Replied(reply)
}

/// The notes on an exit-0 PostToolUse or Stop hook's stdout, which is read only for them: when
/// it is a JSON object, one per reply key another agent reads and this one does not.
fn unread_keys_of(event: Event, stdout: &[u8]) -> Vec<String> {
    let first = stdout.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        return Vec::new();
    }
    match serde_json::from_slice::<Value>(stdout) {
        Ok(Value::Object(obj)) => unread_keys(event, &obj),
        _ => Vec::new(),
    }
}

/// Whether to run the next hook of the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Run the next hook.
    Next,
    /// The event is decided (a deny or a hook error): run no more hooks.
    Done,
}

/// What the Stop path knows besides its hooks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StopFacts {
    /// Consecutive continuations the turn has had.
    pub continuations: u32,
    /// The intent_stop validator's reason, when it asks for a continuation.
    pub intent: Option<String>,
}

/// The decision of an event, built one hook at a time: [`Fold::push`] each hook's run in order
/// while it says [`Flow::Next`], then [`Fold::finish`].
#[derive(Debug, Clone)]
pub(crate) struct Fold {
    event: Event,
    original: Option<Map<String, Value>>,
    input: Option<Map<String, Value>>,
    texts: Vec<String>,
    denied: Option<String>,
    failed: Option<String>,
    warnings: Vec<String>,
    hooks: Vec<HookReport>,
}

impl Fold {
    /// A fold for `event`; `tool_input` is the host's (PreToolUse only).
    pub(crate) fn new(event: Event, tool_input: Option<Map<String, Value>>) -> Fold {
        Fold {
            event,
            original: tool_input.clone(),
            input: tool_input,
            texts: Vec::new(),
            denied: None,
            failed: None,
            warnings: Vec::new(),
            hooks: Vec::new(),
        }
    }

    /// The tool input the next hook sees: the host's, as replaced by the hooks so far.
    pub(crate) fn tool_input(&self) -> Option<&Map<String, Value>> {
        self.input.as_ref()
    }

    /// Whether the event is decided already.
    pub(crate) fn done(&self) -> bool {
        self.denied.is_some() || self.failed.is_some()
    }

    /// Folds in one hook's run. A run pushed after [`Flow::Done`] is ignored.
    pub(crate) fn push(&mut self, run: &HookRun) -> Flow {
        if self.done() {
            return Flow::Done;
        }
        let event = self.event;
        let who = || {
            format!(
                "{} {event} entry {} handler {} (`{}`)",
                run.layer.name(),
                run.entry,
                run.handler,
                short(&run.command)
            )
        };
        self.hooks.push(HookReport {
            layer: run.layer,
            entry: run.entry,
            handler: run.handler,
            command: run.command.clone(),
            ending: describe(run.collected.ending),
            duration_ms: u64::try_from(run.collected.duration.as_millis()).unwrap_or(u64::MAX),
            stderr: None,
        });
        for (truncated, stream) in [
            (run.collected.stdout_truncated, "stdout"),
            (run.collected.stderr_truncated, "stderr"),
        ] {
            if truncated {
                self.warnings.push(format!(
                    "{}: {stream} went past the cap; the rest was discarded",
                    who()
                ));
            }
        }
        match Outcome::read(event, run) {
            Outcome::Failed(failure) => {
                let why = match failure {
                    Failure::Ended(Ending::TimedOut { .. }) => format!(
                        "ran past its {} s timeout: {}",
                        run.timeout.as_secs(),
                        describe(run.collected.ending)
                    ),
                    Failure::Ended(e) => describe(e),
                    Failure::StdoutTruncated => {
                        "its stdout went past the cap, so its answer cannot be read".into()
                    }
                    Failure::UpdatedInputNotObject(k) => {
                        format!("its updatedInput is {k}, not an object")
                    }
                };
                let consequence = match event {
                    Event::PreToolUse => "the call is denied and the turn ends",
                    Event::PostToolUse => "the turn ends",
                    Event::Stop => "the turn ends with this warning",
                };
                let reason = format!("hook error: {}: {why}; {consequence}", who());
                // The reason goes to the model and names only the hook and how it ended; the
                // user, who must fix the hook, also sees what it said on stderr.
                let stderr = tail(&run.collected.stderr);
                let warning = match &stderr {
                    Some(stderr) => format!("{reason}; its stderr: {}", one_line(stderr)),
                    None => reason.clone(),
                };
                self.warnings.push(warning);
                if let Some(report) = self.hooks.last_mut() {
                    report.stderr = stderr;
                }
                self.failed = Some(reason);
                return Flow::Done;
            }
            Outcome::Replied(reply) => {
                for note in reply.notes {
                    self.warnings.push(format!("{}: {note}", who()));
                }
                if let Some(input) = reply.updated_input {
                    self.input = Some(input);
                }
                if reply.deny {
                    self.denied = Some(reply.reason.unwrap_or_else(|| default_deny(&who())));
                    return Flow::Done;
                }
            }
            Outcome::Blocked(text) => match event {
                Event::PreToolUse => {
                    self.denied = Some(text.unwrap_or_else(|| default_deny(&who())));
                    return Flow::Done;
                }
                Event::PostToolUse => self.texts.push(text.unwrap_or_else(|| {
                    format!(
                        "{} exited 2 without saying why: it reports a problem with this result",
                        who()
                    )
                })),
                Event::Stop => self.texts.push(text.unwrap_or_else(|| {
                    format!(
                        "{} exited 2 without saying why: it asks to keep working",
                        who()
                    )
                })),
            },
        }
        Flow::Next
    }

    /// The event's decision. `stop` counts for Stop only.
    pub(crate) fn finish(self, stop: StopFacts) -> Decision {
        let mut d = Decision {
            event: self.event,
            decision: Verdict::Continue,
            reason: None,
            feedback: None,
            message: None,
            notice: None,
            tool_input: None,
            input_changed: None,
            warnings: self.warnings,
            hooks: self.hooks,
        };
        if self.event == Event::PreToolUse {
            d.input_changed = Some(self.input != self.original);
            d.tool_input = self.input;
        }
        if let Some(reason) = self.failed {
            d.decision = Verdict::Error;
            d.reason = Some(reason);
            return d;
        }
        match self.event {
            Event::PreToolUse => {
                if let Some(reason) = self.denied {
                    d.decision = Verdict::Deny;
                    d.reason = Some(reason);
                }
            }
            Event::PostToolUse => {
                if !self.texts.is_empty() {
                    d.decision = Verdict::Feedback;
                    d.feedback = Some(self.texts.join("\n\n"));
                }
            }
            Event::Stop => {
                let mut texts = self.texts;
                texts.extend(stop.intent);
                if texts.is_empty() {
                    d.decision = Verdict::End;
                } else {
                    d.message = Some(texts.join("\n\n"));
                    if stop.continuations < WAKE_BUDGET {
                        d.decision = Verdict::Continue;
                    } else {
                        d.decision = Verdict::Wait;
                        d.notice = Some(format!(
                            "wake budget spent: this turn has had {} consecutive continuations (the budget is {WAKE_BUDGET}); the message waits for the user instead of opening another turn, and the next user message clears the count",
                            stop.continuations
                        ));
                    }
                }
            }
        }
        d
    }
}

/// Folds `runs`, in order, into the decision of `event`: the whole contract between what hooks
/// did and what the host is told. Runs after the event is decided are ignored, as the runner
/// never starts them.
pub fn fold(
    event: Event,
    tool_input: Option<Map<String, Value>>,
    runs: &[HookRun],
    stop: StopFacts,
) -> Decision {
    let mut f = Fold::new(event, tool_input);
    for run in runs {
        if f.push(run) == Flow::Done {
            break;
        }
    }
    f.finish(stop)
}

fn default_deny(who: &str) -> String {
    format!("denied by {who}, which gave no reason")
}

/// A hook's bytes as text for the host: invalid UTF-8 and control characters (but newlines and
/// tabs) become U+FFFD, blank is `None`, and at most [`REASON_CAP`] characters are kept.
pub(crate) fn text(bytes: &[u8]) -> Option<String> {
    let s = String::from_utf8_lossy(bytes);
    let trimmed = s.trim();
    if trimmed.is_empty() {
        return None;
    }
    Some(trimmed.chars().take(REASON_CAP).map(clean).collect())
}

/// The end of a failed hook's stderr for the user: its last [`REASON_CAP`] characters, cleaned
/// as [`text`] cleans; `None` when blank. The end, because that is where a shell or a
/// traceback says what went wrong.
fn tail(bytes: &[u8]) -> Option<String> {
    let s = String::from_utf8_lossy(bytes);
    let trimmed = s.trim();
    if trimmed.is_empty() {
        return None;
    }
    let skip = trimmed.chars().count().saturating_sub(REASON_CAP);
    Some(trimmed.chars().skip(skip).map(clean).collect())
}

/// A control character other than newline, tab and carriage return as U+FFFD.
fn clean(c: char) -> char {
    if c.is_control() && !matches!(c, '\n' | '\t' | '\r') {
        '\u{FFFD}'
    } else {
        c
    }
}

/// Text of several lines as one, for a `warning:` line: its non-blank lines joined by ` | `.
fn one_line(s: &str) -> String {
    s.lines()
        .map(|l| l.trim().replace('\t', " "))
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" | ")
}

/// A command shortened for a message, on one line: a multi-line script must not break the
/// `warning: …` line it is named in.
fn short(s: &str) -> String {
    const MAX: usize = 80;
    let flat = s.chars().map(|c| if c.is_control() { ' ' } else { c });
    if s.chars().count() <= MAX {
        flat.collect()
    } else {
        let mut out: String = flat.take(MAX - 1).collect();
        out.push('…');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(ending: Ending, stdout: &str, stderr: &str) -> HookRun {
        HookRun {
            layer: Layer::Project,
            entry: 0,
            handler: 0,
            command: "hook".into(),
            timeout: Duration::from_secs(5),
            collected: Collected {
                ending,
                duration: Duration::from_millis(3),
                stdout: stdout.as_bytes().to_vec(),
                stderr: stderr.as_bytes().to_vec(),
                stdout_truncated: false,
                stderr_truncated: false,
            },
        }
    }

    fn input() -> Option<Map<String, Value>> {
        Some(
            json!({"command": "make check"})
                .as_object()
                .unwrap()
                .clone(),
        )
    }

    fn pre(runs: &[HookRun]) -> Decision {
        fold(Event::PreToolUse, input(), runs, StopFacts::default())
    }

    #[test]
    fn pre_tool_use_exit_codes() {
        let ok = pre(&[run(Ending::Exited(0), "", "ignored")]);
        assert_eq!(ok.decision, Verdict::Continue);
        assert_eq!(ok.input_changed, Some(false));
        assert!(ok.warnings.is_empty());
        let deny = pre(&[run(Ending::Exited(2), "", "  no network writes\n")]);
        assert_eq!(deny.decision, Verdict::Deny);
        assert_eq!(deny.reason.as_deref(), Some("no network writes"));
        let quiet = pre(&[run(Ending::Exited(2), "", "")]);
        assert!(quiet.reason.unwrap().contains("gave no reason"));
        for e in [
            Ending::Exited(1),
            Ending::Exited(127),
            Ending::Signalled(9),
            Ending::TimedOut { killed: true },
            Ending::SpawnFailed(2),
            Ending::Interrupted,
        ] {
            let d = pre(&[run(e, "{}", "secret stderr")]);
            assert_eq!(d.decision, Verdict::Error, "{e:?}");
            assert!(!d.reason.unwrap().contains("secret"), "stderr never leaks");
        }
    }

    #[test]
    fn a_hook_error_shows_the_end_of_its_stderr_to_the_user() {
        let stderr = format!("{}\nsh: 1: /no/such/hook.sh: not found\n", "x".repeat(3000));
        let d = pre(&[run(Ending::Exited(127), "stdout words", &stderr)]);
        assert_eq!(d.decision, Verdict::Error);
        let reason = d.reason.as_deref().unwrap();
        assert!(
            !reason.contains("not found"),
            "the model gets no stderr: {reason}"
        );
        let warning = &d.warnings[0];
        assert!(warning.starts_with(reason), "{warning}");
        assert!(warning.contains("; its stderr: xxx"), "{warning}");
        assert!(
            warning.ends_with("xxx | sh: 1: /no/such/hook.sh: not found"),
            "{warning}"
        );
        assert!(!warning.contains('\n'), "one line: {warning}");
        assert!(!warning.contains("stdout words"), "stdout is never quoted");
        let quoted = d.hooks[0].stderr.as_deref().unwrap();
        assert_eq!(quoted.chars().count(), REASON_CAP);
        assert!(
            quoted.ends_with("xxx\nsh: 1: /no/such/hook.sh: not found"),
            "whole"
        );
        // A hook that ended well, or denied, has no stderr in its entry; a silent failure none.
        let d = pre(&[
            run(Ending::Exited(0), "", "chatter"),
            run(Ending::Exited(2), "", "no"),
        ]);
        assert!(d.hooks.iter().all(|h| h.stderr.is_none()), "{d:?}");
        let d = pre(&[run(Ending::Exited(1), "", " \n")]);
        assert_eq!(d.hooks[0].stderr, None);
        assert_eq!(d.warnings[0], d.reason.unwrap());
    }

    #[test]
    fn exit_zero_json() {
        let d = pre(&[run(
            Ending::Exited(0),
            r#"{"hookSpecificOutput": {"permissionDecision": "deny", "reason": "r1"}, "reason": "r2"}"#,
            "",
        )]);
        assert_eq!(
            (d.decision, d.reason.as_deref()),
            (Verdict::Deny, Some("r1"))
        );
        let d = pre(&[run(
            Ending::Exited(0),
            r#"{"hookSpecificOutput": {"permissionDecision": "deny"}, "reason": "r2"}"#,
            "",
        )]);
        assert_eq!(d.reason.as_deref(), Some("r2"));
        let d = pre(&[run(
            Ending::Exited(0),
            r#"{"hookSpecificOutput": {"permissionDecision": "deny", "reason": " "}}"#,
            "",
        )]);
        assert!(d.reason.unwrap().contains("gave no reason"));
        for refused in ["allow", "ask"] {
            let out = format!(
                r#"{{"hookSpecificOutput": {{"permissionDecision": "{refused}", "updatedInput": {{"command": "ls"}}}}}}"#
            );
            let d = pre(&[run(Ending::Exited(0), &out, "")]);
            assert_eq!(d.decision, Verdict::Continue);
            assert!(d.warnings[0].contains("refused"), "{:?}", d.warnings);
            assert_eq!(d.tool_input.unwrap()["command"], "ls", "the rest applies");
            assert_eq!(d.input_changed, Some(true));
        }
        let d = pre(&[run(
            Ending::Exited(0),
            r#"{"hookSpecificOutput": {"permissionDecision": "maybe"}}"#,
            "",
        )]);
        assert_eq!(d.decision, Verdict::Continue);
        assert!(d.warnings[0].contains("ignored"));
        assert!(!d.warnings[0].contains("maybe"), "hook stdout never leaks");
        let d = pre(&[run(Ending::Exited(0), "not json", "")]);
        assert_eq!(d.decision, Verdict::Continue);
        assert!(d.warnings[0].contains("not JSON"));
    }

    #[test]
    fn updated_input_chains_and_survives_an_empty_reply() {
        let a = run(
            Ending::Exited(0),
            r#"{"hookSpecificOutput": {"updatedInput": {"command": "a"}}}"#,
            "",
        );
        let b = run(Ending::Exited(0), "", "");
        let d = pre(&[a.clone(), b]);
        assert_eq!(d.tool_input.unwrap()["command"], "a");
        let bad = run(
            Ending::Exited(0),
            r#"{"hookSpecificOutput": {"updatedInput": "rm -rf /"}}"#,
            "",
        );
        let d = pre(&[a, bad]);
        assert_eq!(d.decision, Verdict::Error);
        assert!(d.reason.unwrap().contains("updatedInput is a string"));
        let same = run(
            Ending::Exited(0),
            r#"{"hookSpecificOutput": {"updatedInput": {"command": "make check"}}}"#,
            "",
        );
        assert_eq!(pre(&[same]).input_changed, Some(false));
    }

    #[test]
    fn the_first_deny_or_error_ends_the_event() {
        let d = pre(&[
            run(Ending::Exited(2), "", "first"),
            run(Ending::Exited(1), "", ""),
        ]);
        assert_eq!(d.hooks.len(), 1);
        assert_eq!(d.reason.as_deref(), Some("first"));
        let post = fold(
            Event::PostToolUse,
            None,
            &[
                run(Ending::Exited(2), "", "one"),
                run(Ending::Exited(0), "", ""),
                run(Ending::Exited(2), "", "two"),
            ],
            StopFacts::default(),
        );
        assert_eq!(post.decision, Verdict::Feedback);
        assert_eq!(post.feedback.as_deref(), Some("one\n\ntwo"));
        assert_eq!(post.hooks.len(), 3);
        assert_eq!(post.tool_input, None);
    }

    #[test]
    fn stop_joins_reasons_under_the_wake_budget() {
        let runs = [
            run(Ending::Exited(2), "", "tests fail"),
            run(Ending::Exited(2), "", "docs missing"),
        ];
        let facts = |n| StopFacts {
            continuations: n,
            intent: Some("you said you would".into()),
        };
        let d = fold(Event::Stop, None, &runs, facts(0));
        assert_eq!(d.decision, Verdict::Continue);
        assert_eq!(
            d.message.as_deref(),
            Some("tests fail\n\ndocs missing\n\nyou said you would")
        );
        assert_eq!(
            fold(Event::Stop, None, &runs, facts(1)).decision,
            Verdict::Continue
        );
        let wait = fold(Event::Stop, None, &runs, facts(2));
        assert_eq!(wait.decision, Verdict::Wait);
        assert!(wait.notice.unwrap().contains("wake budget"));
        assert!(wait.message.is_some());
        let end = fold(Event::Stop, None, &[], StopFacts::default());
        assert_eq!(end.decision, Verdict::End);
        let err = fold(
            Event::Stop,
            None,
            &[run(Ending::Exited(3), "", "")],
            facts(0),
        );
        assert_eq!(err.decision, Verdict::Error);
        assert!(err.warnings[0].contains("hook error"));
    }

    #[test]
    fn a_hook_is_named_on_one_line() {
        let mut r = run(Ending::Exited(1), "", "");
        r.command = "set -e\ncat >/dev/null\r\n\texit 1".into();
        let d = pre(&[r]);
        let reason = d.reason.unwrap();
        assert!(!reason.contains(['\n', '\r', '\t']), "{reason:?}");
        assert!(
            reason.contains("(`set -e cat >/dev/null   exit 1`)"),
            "{reason:?}"
        );
        assert_eq!(d.hooks[0].command, "set -e\ncat >/dev/null\r\n\texit 1");
    }

    #[test]
    fn reasons_are_capped_and_cleaned() {
        let long = "é".repeat(5000);
        let d = pre(&[run(Ending::Exited(2), "", &long)]);
        assert_eq!(d.reason.unwrap().chars().count(), REASON_CAP);
        assert_eq!(text(b"a\0b\xff").as_deref(), Some("a\u{FFFD}b\u{FFFD}"));
        assert_eq!(text(b" \n\t"), None);
    }

    #[test]
    fn the_decision_serialises_in_the_documented_shape() {
        let d = pre(&[run(Ending::Exited(2), "", "no network writes")]);
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(v["event"], "PreToolUse");
        assert_eq!(v["decision"], "deny");
        assert_eq!(v["hooks"][0]["ending"], "exit 2");
        assert_eq!(v["hooks"][0]["layer"], "project");
        assert_eq!(v["input_changed"], false);
        assert!(v.get("feedback").is_none());
        let back: Decision = serde_json::from_value(v).unwrap();
        assert_eq!(back, d);
    }
}
