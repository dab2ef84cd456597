//! The built-in Stop validator: asks for another turn when the last assistant message ends by
//! announcing work it then did not do ("Let me run the tests."), rather than reporting, asking
//! or concluding.
//!
//! The rule looks at the message's last sentence only, and is plain string matching, so the
//! same message always gets the same answer:
//!
//! 1. Fenced code blocks at the very end are set aside (a command shown after "Let me run:" was
//!    shown, not run); the last non-blank line is taken, without list, quote or heading marks
//!    and emphasis, and its last sentence (sentences end at `.`, `!` or `?` before a space).
//! 2. A sentence ending in `?` asks: quiet.
//! 3. A sentence that hands the turn back ("let me know", "if you…", "feel free", "would you
//!    like", "should I", "I'll wait", …, see [`HAND_BACK`]) is quiet.
//! 4. Leading fillers are dropped ("Now,", "Next,", "OK,", "First,", "Then", "So", …, see
//!    [`FILLERS`]). The sentence announces when it then starts with a first-person future
//!    opener ("I'll", "I will", "I'm going to", "Let me", "Let's", "I need to", "Time to", …,
//!    see [`OPENERS`]; adverbs such as "also", "now" and "still" may stand inside: "I'm also
//!    going to", [`ADVERBS`]) or has one opening a later clause (after a comma, semicolon, colon
//!    or dash, or after "and", "so", "then" or "now": ", so I'll open it"), unless a verb of
//!    speech follows it ("Let me summarize: …", [`SPEECH`]) or a word that announces no work
//!    ("I will not…", "I'm going to stop here", [`NO_WORK`]); or when it starts with an `-ing`
//!    verb and ends with "now" or "next" ("Running the tests now."); or when the message ends
//!    with a colon and nothing after it ("Here is the plan:").
//! 5. Anything else reports, asks or concludes: quiet.
//!
//! Quiet too, whatever the message, while a goal or a loop owns the turn end or a background
//! job runs: then the turn end is theirs, not the model's.

use super::payload::Turn;

/// Words dropped from the start of the sentence before looking for an opener.
pub const FILLERS: &[&str] = &[
    "now",
    "next",
    "ok",
    "okay",
    "alright",
    "all right",
    "great",
    "good",
    "sure",
    "first",
    "then",
    "so",
    "right",
    "perfect",
    "got it",
    "understood",
    "finally",
    "and",
];

/// First-person future openers: the sentence says what the model will do.
pub const OPENERS: &[&str] = &[
    "i'll ",
    "i will ",
    "i'm going to ",
    "i am going to ",
    "i'm gonna ",
    "i'm about to ",
    "i am about to ",
    "i shall ",
    "we'll ",
    "we will ",
    "we're going to ",
    "we are going to ",
    "i need to ",
    "i now need to ",
    "let me ",
    "let's ",
    "lets ",
    "time to ",
    "going to ",
    "the next step is ",
    "next step is ",
    "next step: ",
    "my next step is ",
];

/// Phrases that hand the turn back to the user: an offer, a question, a wait.
pub const HAND_BACK: &[&str] = &[
    "let me know",
    "if you",
    "feel free",
    "would you like",
    "do you want",
    "want me to",
    "shall i",
    "should i",
    "i'll wait",
    "i will wait",
    "i'll be here",
    "i'll stop here",
    "i'll leave",
    "i'll let you",
    "when you're ready",
    "once you confirm",
    "happy to",
    "up to you",
    "your call",
];

/// Adverbs skipped between a subject and its verb.
pub const ADVERBS: &[&str] = &["also", "now", "still", "just", "quickly", "actually"];

/// Verbs of speech: an opener followed by one of them ("Let me summarize: …", "I'll explain
/// why") delivers what it announces in the same message.
pub const SPEECH: &[&str] = &[
    "summarize",
    "summarise",
    "recap",
    "explain",
    "clarify",
    "note",
    "point",
    "say",
];

/// Words after an opener that announce no work: a refusal ("I will not change the API") or an
/// end ("I'm going to stop here", "Let me pause there").
pub const NO_WORK: &[&str] = &["not", "never", "stop", "wait", "pause", "leave"];

/// `-ing` words that are not verbs, so "Everything is working now." reports.
const NOT_VERBS: &[&str] = &["everything", "nothing", "something", "anything", "during"];

/// The continuation message when the rule fires.
pub fn reason(sentence: &str) -> String {
    let quoted: String = sentence.chars().take(200).collect();
    format!(
        "Your last message ends by saying what you will do next (\"{quoted}\"), but the turn ended before you did it. Do that work now, or say plainly that you are stopping and why."
    )
}

/// The validator on a completed turn: the continuation message, or `None` to stay quiet.
pub fn check(turn: &Turn) -> Option<String> {
    if turn.goal_active || turn.loop_active || turn.background_jobs > 0 {
        return None;
    }
    announced(&turn.last_assistant_message).map(|s| reason(&s))
}

/// The announcing sentence, if the message ends with one.
pub fn announced(message: &str) -> Option<String> {
    let (body, had_code) = without_trailing_code(message);
    let line = body.lines().rev().map(str::trim).find(|l| !l.is_empty())?;
    let line = unmark(line);
    let sentence = last_sentence(line);
    if sentence.is_empty() || sentence.ends_with('?') {
        return None;
    }
    let lower = sentence
        .to_lowercase()
        .replace(['\u{2019}', '\u{2018}'], "'")
        .replace("**", "");
    if HAND_BACK.iter().any(|p| lower.contains(p)) {
        return None;
    }
    let core = drop_fillers(&lower);
    let opens = [lower.as_str(), core]
        .into_iter()
        .chain(
            [without_adverbs(&lower), without_adverbs(core)]
                .iter()
                .map(String::as_str),
        )
        .any(opens);
    let first = core.split_whitespace().next().unwrap_or("");
    let first = first.trim_matches(|c: char| !c.is_alphanumeric());
    let tail = lower.trim_end_matches(['.', '!', '…', ' ']);
    let doing_now = first.len() > 4
        && first.ends_with("ing")
        && !NOT_VERBS.contains(&first)
        && (tail.ends_with(" now") || tail.ends_with(" next"));
    let dangling_colon = !had_code && sentence.ends_with(':');
    (opens || doing_now || dangling_colon).then(|| sentence.to_owned())
}

/// Whether `text` announces: it starts with an opener, or an opener starts one of its later
/// clauses (after a comma, semicolon, colon or dash, or after "and", "so", "then" or "now"), and
/// what follows the opener is not a verb of speech ("Let me explain: …" delivers what it says)
/// nor a word of refusal or ending ([`NO_WORK`]).
fn opens(text: &str) -> bool {
    OPENERS.iter().any(|opener| {
        text.match_indices(opener).any(|(at, _)| {
            let before = text[..at].trim_end();
            let starts_clause = before.is_empty()
                || before.ends_with([',', ';', ':', '\u{2014}', '-'])
                || matches!(
                    before.split_whitespace().next_back(),
                    Some("and" | "so" | "then" | "now")
                );
            let next = text[at + opener.len()..].split_whitespace().next();
            let next = next.map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()));
            starts_clause && !next.is_some_and(|w| SPEECH.contains(&w) || NO_WORK.contains(&w))
        })
    })
}

/// `text` without the adverbs that may stand between a subject and its verb ("I'm also going
/// to", "I'll now run", "I still need to").
fn without_adverbs(text: &str) -> String {
    text.split(' ')
        .filter(|w| !ADVERBS.contains(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The message without the fenced code blocks it ends with, and whether there were any.
fn without_trailing_code(message: &str) -> (&str, bool) {
    let mut body = message.trim_end();
    let mut had = false;
    while body.ends_with("```") {
        let Some(close) = body.rfind("```") else {
            break;
        };
        let Some(open) = body[..close].rfind("```") else {
            break;
        };
        body = body[..open].trim_end();
        had = true;
    }
    (body, had)
}

/// A line without list, quote and heading marks and emphasis.
fn unmark(line: &str) -> &str {
    let mut l = line.trim();
    loop {
        let before = l;
        l = l.trim_start_matches(['-', '*', '>', '#', '+']).trim_start();
        let digits = l.len() - l.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 && l[digits..].starts_with(['.', ')']) {
            l = l[digits + 1..].trim_start();
        }
        if l == before {
            break;
        }
    }
    l.trim_matches(['*', '_']).trim()
}

/// The last sentence of a line: after the last `.`, `!` or `?` that a space follows.
fn last_sentence(line: &str) -> &str {
    let bytes = line.as_bytes();
    let mut start = 0;
    for i in 0..bytes.len().saturating_sub(1) {
        if matches!(bytes[i], b'.' | b'!' | b'?') && bytes[i + 1] == b' ' {
            let rest = line[i + 1..].trim();
            // Several closing marks in a row ("...") end one sentence, not start empty ones.
            if !rest.is_empty() {
                start = i + 1;
            }
        }
    }
    line[start..].trim()
}

/// The sentence without leading fillers ("Now, ", "OK so ").
fn drop_fillers(lower: &str) -> &str {
    let mut s = lower.trim_start();
    'again: loop {
        for f in FILLERS {
            if let Some(rest) = s.strip_prefix(f)
                && (rest.starts_with([',', ' ', ':', '—', '-']) || rest.is_empty())
            {
                s = rest.trim_start_matches([',', ' ', ':', '—', '-']);
                continue 'again;
            }
        }
        return s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_sentence_decides() {
        assert!(announced("Tests pass. Now I'll update the docs.").is_some());
        assert!(announced("I'll update the docs. Done: the docs are updated.").is_none());
        assert!(announced("Let me run the tests:\n```sh\ncargo test\n```").is_some());
        assert!(announced("Here is the fix:\n```diff\n-a\n+b\n```").is_none());
        assert!(announced("Here is the plan:").is_some());
        assert!(announced("").is_none());
        assert!(announced("Shall I go on?").is_none());
        assert!(announced("Everything is working now.").is_none());
        assert!(announced("Running the tests now.").is_some());
        assert!(announced("I will not change the API.").is_none());
        assert!(announced("I'm going to stop here for today.").is_none());
        assert!(announced("We'll run the migration next.").is_some());
    }

    #[test]
    fn owners_of_the_turn_end_keep_it_quiet() {
        let t = |goal, lp, jobs| Turn {
            last_assistant_message: "Let me check the logs.".into(),
            goal_active: goal,
            loop_active: lp,
            background_jobs: jobs,
            ..Turn::default()
        };
        assert!(check(&t(false, false, 0)).is_some());
        assert!(check(&t(true, false, 0)).is_none());
        assert!(check(&t(false, true, 0)).is_none());
        assert!(check(&t(false, false, 1)).is_none());
    }
}
