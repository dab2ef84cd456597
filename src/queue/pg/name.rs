//! A queue's name inside its database.

use serde::Serialize;

use crate::queue::pg::error::PgError;

/// The longest queue name, in bytes.
pub const MAX_QUEUE_NAME: usize = 200;

/// The name of a queue inside its database: every row of the queue carries it, so queues that
/// share a database never see each other's rows. 1 to 200 of `A-Z a-z 0-9 . _ - / : @ +`,
/// starting with a letter or digit, so that a repository's remote (`github.com/org/repo`) can
/// be one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct QueueName(String);

impl QueueName {
    /// Checks `name`.
    pub fn new(name: impl Into<String>) -> Result<Self, PgError> {
        let name = name.into();
        let mut bytes = name.bytes();
        let first = bytes.next().is_some_and(|b| b.is_ascii_alphanumeric());
        let rest = bytes.all(|b| b.is_ascii_alphanumeric() || b"._-/:@+".contains(&b));
        if first && rest && name.len() <= MAX_QUEUE_NAME {
            Ok(Self(name))
        } else {
            let cut: String = name.chars().take(60).collect();
            Err(PgError::BadQueueName(cut))
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for QueueName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in [
            "main",
            "github.com/org/repo",
            "a",
            "git@host:org/repo.git",
            "q+1",
        ] {
            assert_eq!(QueueName::new(ok).unwrap().as_str(), ok);
        }
        let long = "a".repeat(MAX_QUEUE_NAME + 1);
        for bad in ["", "-x", "/x", "a b", "a\nb", "é", long.as_str()] {
            assert!(QueueName::new(bad).is_err(), "{bad:?}");
        }
    }
}
