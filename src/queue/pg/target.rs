//! Connection strings: libpq's URL (`postgres://user:pw@host:5432/db?sslmode=require`) and
//! key/value (`host=db user=hookq sslmode=verify-full`) forms, read into a
//! [`postgres::Config`] and the TLS settings it does not know; and the masker that keeps a
//! password out of every message.

use std::path::PathBuf;
use std::str::FromStr;

use crate::queue::pg::error::PgError;

/// How a connection uses TLS, as libpq's `sslmode` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// No TLS.
    Disable,
    /// TLS when the server offers it, without checking its certificate (libpq's default).
    Prefer,
    /// TLS or no connection; the certificate is not checked unless `sslrootcert` is given, in
    /// which case it must be signed by that CA (as libpq does with a root file).
    Require,
    /// TLS, with a certificate signed by a trusted CA, whatever name it gives.
    VerifyCa,
    /// TLS, with a certificate signed by a trusted CA that names the host connected to.
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Result<Self, String> {
        Ok(match value {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            "allow" => {
                return Err(
                    "sslmode=allow is not supported; use prefer (TLS when offered) or disable"
                        .into(),
                );
            }
            other => {
                return Err(format!(
                    "unknown sslmode {other:?}; expected disable, prefer, require, verify-ca or verify-full"
                ));
            }
        })
    }
}

/// The CAs a verifying connection trusts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootCerts {
    /// The system's roots (`sslrootcert` unset or `system`).
    System,
    /// The PEM certificates of this file (`sslrootcert=/path/ca.pem`).
    File(PathBuf),
}

/// A parsed connection string: where to connect and how, and how to show it.
#[derive(Clone)]
pub struct Target {
    config: postgres::Config,
    ssl_mode: SslMode,
    roots: RootCerts,
    masked: String,
}

impl std::fmt::Debug for Target {
    /// The masked string only: the config holds the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("target", &self.masked)
            .field("ssl_mode", &self.ssl_mode)
            .field("roots", &self.roots)
            .finish()
    }
}

impl std::fmt::Display for Target {
    /// The connection string with its password masked.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.masked)
    }
}

/// The TLS keys hookq reads itself; `postgres::Config` does not know them.
const TLS_KEYS: [&str; 2] = ["sslmode", "sslrootcert"];
/// Client-certificate keys, refused rather than ignored.
const CLIENT_CERT_KEYS: [&str; 4] = ["sslcert", "sslkey", "sslpassword", "sslcrl"];

impl Target {
    /// Reads a connection string in either of libpq's forms.
    pub fn parse(text: &str) -> Result<Self, PgError> {
        let masked = mask(text);
        let bad = |reason: String| PgError::BadTarget {
            target: masked.clone(),
            reason,
        };
        let text = text.trim();
        let (rest, tls) = if is_url(text) {
            split_url(text).map_err(bad)?
        } else {
            split_pairs(text).map_err(bad)?
        };
        let mut ssl_mode = SslMode::Prefer;
        let mut roots = RootCerts::System;
        let mut rootcert_given = false;
        for (key, value) in tls {
            match key.as_str() {
                "sslmode" => ssl_mode = SslMode::parse(&value).map_err(bad)?,
                "sslrootcert" => {
                    rootcert_given = true;
                    roots = if value == "system" {
                        RootCerts::System
                    } else {
                        RootCerts::File(PathBuf::from(value))
                    }
                }
                _ => unreachable!("only TLS keys are split off"),
            }
        }
        if rootcert_given && ssl_mode == SslMode::Require {
            ssl_mode = SslMode::VerifyCa;
        }
        let mut config = postgres::Config::from_str(&rest)
            .map_err(|e| bad(crate::queue::pg::error::error_chain(&e)))?;
        config.ssl_mode(match ssl_mode {
            SslMode::Disable => postgres::config::SslMode::Disable,
            SslMode::Prefer => postgres::config::SslMode::Prefer,
            _ => postgres::config::SslMode::Require,
        });
        if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
            return Err(bad(
                "no host: name one (host=... or postgres://HOST/...); a unix socket is its folder"
                    .into(),
            ));
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(std::time::Duration::from_secs(10));
        }
        keepalive_defaults(&mut config);
        Ok(Self {
            config,
            ssl_mode,
            roots,
            masked,
        })
    }

    /// The connection string with its password masked, for messages.
    pub fn masked(&self) -> &str {
        &self.masked
    }

    /// How the connection uses TLS.
    pub fn ssl_mode(&self) -> SslMode {
        self.ssl_mode
    }

    /// The CAs a verifying connection trusts.
    pub fn roots(&self) -> &RootCerts {
        &self.roots
    }

    /// The client's config (TLS mode set; hookq's own TLS keys taken out).
    pub fn config(&self) -> &postgres::Config {
        &self.config
    }
}

/// TCP keepalives after 10 s idle, every 5 s, 3 unanswered probes (so a peer that vanished is
/// noticed within 25 s), and at most 25 s for data sent to go unacknowledged
/// (`tcp_user_timeout`), unless the connection string says otherwise. The client's own
/// defaults (probes after 2 hours, as the kernel's) would leave a connection to a server that
/// vanished, and a runner lock held from a host that did, in place for hours.
fn keepalive_defaults(config: &mut postgres::Config) {
    use std::time::Duration;
    // The client's default idle time: a connection string that sets none left it there.
    if config.get_keepalives_idle() == Duration::from_secs(2 * 60 * 60) {
        config.keepalives_idle(KEEPALIVES_IDLE);
    }
    if config.get_keepalives_interval().is_none() {
        config.keepalives_interval(KEEPALIVES_INTERVAL);
    }
    if config.get_keepalives_retries().is_none() {
        config.keepalives_retries(KEEPALIVES_RETRIES);
    }
    if config.get_tcp_user_timeout().is_none() {
        config.tcp_user_timeout(KEEPALIVES_IDLE + KEEPALIVES_INTERVAL * KEEPALIVES_RETRIES);
    }
}

/// The keepalive settings a connection string leaves unset (`keepalives_idle`,
/// `keepalives_interval`, `keepalives_retries`, in seconds and probes).
pub const KEEPALIVES_IDLE: std::time::Duration = std::time::Duration::from_secs(10);
/// See [`KEEPALIVES_IDLE`].
pub const KEEPALIVES_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);
/// See [`KEEPALIVES_IDLE`].
pub const KEEPALIVES_RETRIES: u32 = 3;

fn is_url(text: &str) -> bool {
    text.starts_with("postgres://") || text.starts_with("postgresql://")
}

/// Splits a URL's TLS parameters off: the URL without them, and them (decoded).
fn split_url(text: &str) -> Result<(String, Vec<(String, String)>), String> {
    let Some((base, query)) = text.split_once('?') else {
        return Ok((text.to_owned(), Vec::new()));
    };
    let mut kept = Vec::new();
    let mut tls = Vec::new();
    for param in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = param.split_once('=').unwrap_or((param, ""));
        let key = percent_decode(key)?;
        if TLS_KEYS.contains(&key.as_str()) {
            tls.push((key, percent_decode(value)?));
        } else if CLIENT_CERT_KEYS.contains(&key.as_str()) {
            return Err(format!("{key}: client certificates are not supported"));
        } else {
            kept.push(param);
        }
    }
    let url = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((url, tls))
}

fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or("a % that is not followed by two hex digits")?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "a parameter that is not UTF-8".into())
}

/// A key/value string's pairs, in order; values unquoted and unescaped.
fn pairs(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Ok(out);
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next() != Some('=') {
            return Err(format!("expected `=` after {key:?}"));
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next() {
                    None => return Err(format!("unterminated quoted value of {key:?}")),
                    Some('\'') => break,
                    Some('\\') => value.extend(chars.next()),
                    Some(c) => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    value.extend(chars.next());
                } else {
                    value.push(c);
                }
            }
        }
        out.push((key, value));
    }
}

/// Splits a key/value string's TLS pairs off: the string without them, and them.
fn split_pairs(text: &str) -> Result<(String, Vec<(String, String)>), String> {
    let mut kept = Vec::new();
    let mut tls = Vec::new();
    for (key, value) in pairs(text)? {
        if TLS_KEYS.contains(&key.as_str()) {
            tls.push((key, value));
        } else if CLIENT_CERT_KEYS.contains(&key.as_str()) {
            return Err(format!("{key}: client certificates are not supported"));
        } else {
            let quoted = value.replace('\\', "\\\\").replace('\'', "\\'");
            kept.push(format!("{key}='{quoted}'"));
        }
    }
    Ok((kept.join(" "), tls))
}

/// What stands for a password in a masked string.
pub const MASK: &str = "***";

/// `text` with any password replaced by `***`: the one of a URL's user info, a `password`
/// parameter of a URL or a `password=` pair. Works on strings too broken to parse: every
/// message that shows a connection string shows it through this.
pub fn mask(text: &str) -> String {
    masked(text).0
}

/// Whether `text` holds a password in any of the places [`mask`] hides one (an empty one
/// too): a connection string that must not be written where others can read it.
pub fn has_password(text: &str) -> bool {
    masked(text).1
}

/// The masked string, and whether it hid anything.
fn masked(text: &str) -> (String, bool) {
    let trimmed = text.trim();
    if is_url(trimmed) {
        mask_url(trimmed)
    } else {
        mask_pairs(trimmed)
    }
}

fn mask_url(text: &str) -> (String, bool) {
    let mut hid = false;
    let scheme_end = text.find("://").map_or(0, |i| i + 3);
    let (scheme, rest) = text.split_at(scheme_end);
    // The user info ends at the last `@` before the path or query.
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rfind('@') {
        Some(at) => {
            let (info, host) = authority.split_at(at);
            match info.split_once(':') {
                Some((user, _)) => {
                    hid = true;
                    format!("{user}:{MASK}{host}")
                }
                None => authority.to_owned(),
            }
        }
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _)) if percent_decode(k).is_ok_and(|k| k == "password") => {
                        hid = true;
                        format!("{k}={MASK}")
                    }
                    _ => p.to_owned(),
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => tail.to_owned(),
    };
    (format!("{scheme}{authority}{tail}"), hid)
}

fn mask_pairs(text: &str) -> (String, bool) {
    let mut hid = false;
    let masked = match pairs(text) {
        Ok(pairs) => pairs
            .into_iter()
            .map(|(k, v)| {
                if k == "password" {
                    hid = true;
                    format!("{k}={MASK}")
                } else if v.is_empty() || v.contains([' ', '\'', '\\']) {
                    let quoted = v.replace('\\', "\\\\").replace('\'', "\\'");
                    format!("{k}='{quoted}'")
                } else {
                    format!("{k}={v}")
                }
            })
            .collect::<Vec<_>>()
            .join(" "),
        // Unparseable: keep what stands before the first `password`, hide the rest.
        Err(_) => match text.find("password") {
            Some(at) => {
                hid = true;
                format!("{}password={MASK} (rest hidden)", &text[..at])
            }
            None => text.to_owned(),
        },
    };
    (masked, hid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_every_form_of_password() {
        let cases = [
            (
                "postgres://hookq:s3cret@db.example:5432/q?sslmode=require",
                "postgres://hookq:***@db.example:5432/q?sslmode=require",
            ),
            (
                "postgresql://hookq:p%40ss:w@rd@db/q",
                "postgresql://hookq:***@db/q",
            ),
            (
                "postgres://hookq@db/q?password=s3cret&sslmode=disable",
                "postgres://hookq@db/q?password=***&sslmode=disable",
            ),
            ("postgres://db/q", "postgres://db/q"),
            (
                "host=db user=hookq password=s3cret dbname=q",
                "host=db user=hookq password=*** dbname=q",
            ),
            (
                "host=db password = 'a b\\' c' dbname=q",
                "host=db password=*** dbname=q",
            ),
            (
                "host=db password='s3cret",
                "host=db password=*** (rest hidden)",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(mask(text), want, "{text}");
            assert!(!mask(text).contains("s3cret"));
            assert_eq!(has_password(text), text != "postgres://db/q", "{text}");
        }
        for text in [
            "postgres://hookq@db/q?sslmode=disable",
            "host=db user=hookq dbname=q",
            "host='a b",
        ] {
            assert!(!has_password(text), "{text}");
        }
    }

    #[test]
    fn reads_both_forms_and_the_tls_keys() {
        let t = Target::parse(
            "postgres://hookq:pw@127.0.0.1:5433/q?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.pem&application_name=x",
        )
        .unwrap();
        assert_eq!(t.ssl_mode(), SslMode::VerifyFull);
        assert_eq!(t.roots(), &RootCerts::File("/tmp/ca.pem".into()));
        assert_eq!(t.config().get_ports(), [5433]);
        assert_eq!(t.config().get_application_name(), Some("x"));
        assert_eq!(t.config().get_password(), Some(&b"pw"[..]));
        assert!(!format!("{t:?} {t}").contains("pw@"));

        let t = Target::parse("host=/tmp/sock user=hookq password='a b' sslmode=require").unwrap();
        assert_eq!(t.ssl_mode(), SslMode::Require);
        assert_eq!(t.config().get_password(), Some(&b"a b"[..]));
        assert_eq!(t.config().get_dbname(), None);

        // As libpq: require with a CA of its own checks the chain.
        let t = Target::parse("host=db sslmode=require sslrootcert=/ca.pem").unwrap();
        assert_eq!(t.ssl_mode(), SslMode::VerifyCa);
        let t = Target::parse("host=db").unwrap();
        assert_eq!(
            (t.ssl_mode(), t.roots()),
            (SslMode::Prefer, &RootCerts::System)
        );
    }

    #[test]
    fn refuses_what_it_cannot_honour_without_showing_the_password() {
        for (text, why) in [
            ("host=db password=s3cret sslmode=allow", "allow"),
            (
                "host=db password=s3cret sslmode=sometimes",
                "unknown sslmode",
            ),
            (
                "postgres://u:s3cret@db/q?sslcert=/c.pem",
                "client certificates",
            ),
            ("host=db password=s3cret bogus=1", "bogus"),
            ("user=hookq password=s3cret", "no host"),
            ("postgres://u:s3cret@db:notaport/q", "port"),
        ] {
            let err = Target::parse(text).unwrap_err().to_string();
            assert!(err.contains(why), "{text}: {err}");
            assert!(!err.contains("s3cret"), "{err}");
        }
    }
}
