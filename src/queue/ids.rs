//! Task and plan ids: validated once at the edge, because they become path components and
//! environment values.

use std::fmt;
use std::str::FromStr;

/// Why an id was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind} id {shown}: {why}")]
pub struct IdError {
    kind: &'static str,
    shown: String,
    why: &'static str,
}

const MAX_LEN: usize = 128;

fn validate(kind: &'static str, s: &str) -> Result<(), IdError> {
    let refuse = |why| {
        Err(IdError {
            kind,
            shown: shown(s),
            why,
        })
    };
    if s.is_empty() {
        return refuse("must not be empty");
    }
    if s == "." || s == ".." {
        return refuse("must not be `.` or `..`");
    }
    // The characters first: a long id of other characters is told what is wrong with them.
    let mut bytes = s.bytes();
    if !bytes.next().is_some_and(|b| b.is_ascii_alphanumeric()) {
        return refuse("must start with an ASCII letter or digit");
    }
    if !bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) {
        return refuse("may only hold ASCII letters, digits, `.`, `_` and `-`");
    }
    if s.len() > MAX_LEN {
        return refuse("longer than 128 characters");
    }
    Ok(())
}

/// An id as it may be shown in an error: quoted, escaped, and cut short.
fn shown(s: &str) -> String {
    let cut: String = s.chars().take(40).collect();
    let mut out = format!("{cut:?}");
    if cut.len() < s.len() {
        out.push_str(" (cut)");
    }
    out
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            /// Validates `s` against `[A-Za-z0-9][A-Za-z0-9._-]{0,127}`, never `.` or `..`.
            pub fn new(s: impl Into<String>) -> Result<Self, IdError> {
                let s = s.into();
                validate($kind, &s)?;
                Ok(Self(s))
            }

            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, IdError> {
                Self::new(s)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }
    };
}

id_type!(
    /// A task id, safe to use as a path component and an environment value.
    TaskId,
    "task"
);
id_type!(
    /// A plan id, safe to use as an environment value.
    PlanId,
    "plan"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_ids() {
        for ok in ["t1", "A", "0", "task-1.2_b", &"a".repeat(128)] {
            assert!(TaskId::new(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn refuses_hostile_ids() {
        let long = "a".repeat(129);
        for bad in [
            "", ".", "..", "-x", ".hidden", "_x", "a/b", "../x", "a\0b", "a\nb", "a b", "tаsk",
            "ｔask", "a\\b", &long,
        ] {
            let err = TaskId::new(bad).unwrap_err();
            assert!(err.to_string().starts_with("invalid task id"), "{err}");
        }
    }

    #[test]
    fn error_shows_a_short_escaped_id() {
        let err = PlanId::new(format!("x/{}", "y".repeat(10_000))).unwrap_err();
        let text = err.to_string();
        assert!(text.len() < 200, "{text}");
        assert!(text.contains("(cut)"));
        let err = TaskId::new("a\nb").unwrap_err().to_string();
        assert!(err.contains(r#""a\nb""#), "{err}");
        // 65 two-byte characters: what is wrong is the characters, not the length.
        let err = TaskId::new("é".repeat(65)).unwrap_err().to_string();
        assert!(err.contains("must start with an ASCII letter"), "{err}");
        let err = TaskId::new(format!("a{}", "é".repeat(64)))
            .unwrap_err()
            .to_string();
        assert!(err.contains("may only hold ASCII"), "{err}");
    }
}
