//! A queue's name inside its database.

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::queue::pg::error::PgError;

/// The longest queue name, in bytes.
pub const MAX_QUEUE_NAME: usize = 200;

/// What every queue's channel starts with ([`QueueName::channel`]).
pub const CHANNEL_PREFIX: &str = "hookq:";

/// The longest channel name PostgreSQL takes, in bytes: an identifier's limit (`NAMEDATALEN` - 1).
/// `pg_notify` refuses a longer one and `LISTEN` cuts it, so no channel of hookq's is longer.
pub const MAX_CHANNEL: usize = 63;

/// Hex digits of the name's SHA-256 that end the channel of a name too long to be one whole.
const CHANNEL_HASH_HEX: usize = 12;

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

    /// The channel the queue's hubs and views listen on, and that a commit recording its points
    /// notifies (with the name as the payload), so that a commit wakes only its own queue's
    /// hubs and views rather than every one of the database. `hookq:` and the name when that fits
    /// in PostgreSQL's 63 bytes (a name of up to 57); else `hookq:`, the name's first 44 bytes,
    /// `#` and the first 12 hex digits of the name's SHA-256, 63 bytes. No name has a `#`, so the
    /// two forms never meet. Two names may still share a channel (a cut and a hash alike): a
    /// listener compares the payload with its queue, so a shared channel costs a spurious
    /// wake-up, never a missed one.
    pub fn channel(&self) -> String {
        // The rule is docs/postgres.md's ("Each queue's channel"): hosts in other languages
        // compute it too, so it never changes without a deprecation window like
        // `LEGACY_CHANNEL`'s.
        let whole = CHANNEL_PREFIX.len() + self.0.len();
        if whole <= MAX_CHANNEL {
            return format!("{CHANNEL_PREFIX}{}", self.0);
        }
        let keep = MAX_CHANNEL - CHANNEL_PREFIX.len() - 1 - CHANNEL_HASH_HEX;
        let digest = Sha256::digest(self.0.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        // Names are ASCII, so any byte count is a character boundary.
        format!(
            "{CHANNEL_PREFIX}{}#{}",
            &self.0[..keep],
            &hex[..CHANNEL_HASH_HEX]
        )
    }
}

/// `channel` as an SQL identifier, for `LISTEN`: double-quoted (its case and its `:` `/` `.`
/// kept), a `"` inside doubled.
pub(crate) fn quote_ident(channel: &str) -> String {
    format!("\"{}\"", channel.replace('"', "\"\""))
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
        let long = long.as_str();
        for bad in ["", "-x", "/x", "a b", "a\nb", "é", long, "a#b"] {
            assert!(QueueName::new(bad).is_err(), "{bad:?}");
        }
    }
}

#[cfg(test)]
mod channel_tests {
    use super::*;

    fn channel(name: &str) -> String {
        QueueName::new(name).unwrap().channel()
    }

    #[test]
    fn a_name_that_fits_is_its_channel_whole() {
        assert_eq!(channel("main"), "hookq:main");
        assert_eq!(channel("github.com/org/repo"), "hookq:github.com/org/repo");
        let fits = "a".repeat(MAX_CHANNEL - CHANNEL_PREFIX.len());
        assert_eq!(channel(&fits), format!("hookq:{fits}"));
        assert_eq!(channel(&fits).len(), MAX_CHANNEL);
    }

    #[test]
    fn a_longer_name_is_cut_and_hashed_within_the_limit() {
        let name = format!("{}b", "a".repeat(MAX_CHANNEL - CHANNEL_PREFIX.len()));
        let c = channel(&name);
        assert_eq!(c.len(), MAX_CHANNEL);
        assert!(c.starts_with(&format!("hookq:{}#", "a".repeat(44))), "{c}");
        // The first 12 hex digits of the name's SHA-256, as the SQL of docs/postgres.md reads
        // them: `left(encode(sha256(convert_to(name, 'UTF8')), 'hex'), 12)`.
        let hex = c.rsplit('#').next().unwrap();
        assert_eq!(hex.len(), 12);
        assert!(hex.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        // One byte more or less, another channel; the longest names too.
        let longer = format!("{name}c");
        assert_ne!(channel(&longer), c);
        let max = "z".repeat(MAX_QUEUE_NAME);
        assert_eq!(channel(&max).len(), MAX_CHANNEL);
    }
}
