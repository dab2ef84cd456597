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
                let other = if plain(other) {
                    format!(" `{other}`")
                } else {
                    String::new()
                };
                return Err(format!(
                    "unknown sslmode{other}; expected disable, prefer, require, verify-ca or verify-full"
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
    /// The string as written: targets of one string share a process's connections.
    identity: String,
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
        let identity = text.trim().to_owned();
        let bad = |reason: String| PgError::BadTarget {
            reason: unquote_hidden(&reason, &masked),
            target: masked.clone(),
        };
        let text = text.trim();
        if !is_url(text) && !text.contains('=') {
            return Err(bad(
                "neither a URL (postgres://... or postgresql://...) nor key=value pairs".into(),
            ));
        }
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
        let mut config = postgres::Config::from_str(&rest).map_err(|e| bad(client_reason(&e)))?;
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
            identity,
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

    /// The connection string as written, password and all: what tells two targets apart when
    /// a process shares its connections by target. Never shown.
    pub(crate) fn identity(&self) -> &str {
        &self.identity
    }

    /// The client's config (TLS mode set; hookq's own TLS keys taken out).
    pub fn config(&self) -> &postgres::Config {
        &self.config
    }
}

/// What the client says of a string it cannot read, less what it quotes of the string unless
/// that is a plain name: it names an unknown key as written (`unknown option \`passwrd\``), and
/// a key may be a piece of a broken URL.
fn client_reason(e: &postgres::Error) -> String {
    let text = crate::queue::pg::error::error_chain(e);
    const UNKNOWN: &str = "unknown option `";
    match text.find(UNKNOWN) {
        Some(at) => {
            let key = text[at + UNKNOWN.len()..].trim_end_matches('`');
            let shown = if !plain(key) {
                String::new()
            } else if password_like(key) && key != "password" {
                format!(" `{key}` (did you mean password?)")
            } else {
                format!(" `{key}`")
            };
            format!("{}unknown option{shown}", &text[..at])
        }
        None => text,
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

/// A key/value string's pairs, in order; values unquoted and unescaped. Its errors show a key
/// only when it is a plain name, and never a value: the string may be a URL gone wrong, its
/// password in what was read as a key.
fn pairs(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().enumerate().peekable();
    loop {
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let Some(&(at, _)) = chars.peek() else {
            return Ok(out);
        };
        let mut key = String::new();
        while let Some((_, c)) = chars.next_if(|(_, c)| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        if chars.next().map(|(_, c)| c) != Some('=') {
            return Err(format!("expected `=` after {}", shown(&key, at)));
        }
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if(|(_, c)| *c == '\'').is_some() {
            loop {
                match chars.next().map(|(_, c)| c) {
                    None => {
                        return Err(format!("unterminated quoted value of {}", shown(&key, at)));
                    }
                    Some('\'') => break,
                    Some('\\') => value.extend(chars.next().map(|(_, c)| c)),
                    Some(c) => value.push(c),
                }
            }
        } else {
            while let Some((_, c)) = chars.next_if(|(_, c)| !c.is_whitespace()) {
                if c == '\\' {
                    value.extend(chars.next().map(|(_, c)| c));
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

/// `text` with anything that may be a password replaced by `***`, however broken `text` is:
/// everything between a `:` and the last `@` after it (a URL's user info, or what was meant as
/// one), the value of every key that looks like a password (`password`, `passwrd`, `pwd`,
/// `secret`, in a URL's query or as a `key=value` pair), and, where such a key's value cannot be
/// told apart, everything from that key on. Every message that shows a connection string shows
/// it through this.
pub fn mask(text: &str) -> String {
    masked(text).0
}

/// Whether `text` holds a password in any of the places [`mask`] hides one (an empty one
/// too): a connection string that must not be written where others can read it.
pub fn has_password(text: &str) -> bool {
    masked(text).1
}

/// Whether a key names a password, or may have been meant to (`passwrd`, `pwd`, `secret`):
/// its value is never shown.
fn password_like(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    ["pas", "pw", "wor", "secret", "token", "cred"]
        .iter()
        .any(|p| key.contains(p))
}

/// The masked string, and whether it hid anything.
fn masked(text: &str) -> (String, bool) {
    let trimmed = text.trim();
    let (text, mut hid) = mask_user_info(trimmed);
    let (text, hid_form) = if is_url(trimmed) {
        mask_query(&text)
    } else {
        mask_pairs(&text)
    };
    hid |= hid_form;
    let (text, hid_rest) = mask_assignments(&text);
    (text, hid || hid_rest)
}

/// Hides everything between the first `:` (after a `postgres://` or `postgresql://` scheme)
/// and the last `@`: the user info of a URL, wherever a broken one puts its `@` (a password
/// may hold `/`, `?` or `@` of its own). A query that holds an `@` hides more than it needs to,
/// never less.
fn mask_user_info(text: &str) -> (String, bool) {
    let start = ["postgres://", "postgresql://"]
        .iter()
        .find(|p| text.starts_with(*p))
        .map_or(0, |p| p.len());
    let Some(at) = text.rfind('@').filter(|at| *at >= start) else {
        return (text.to_owned(), false);
    };
    let Some(colon) = text[start..at].find(':').map(|c| start + c) else {
        return (text.to_owned(), false);
    };
    (
        format!("{}{MASK}{}", &text[..=colon], &text[at..]),
        true,
    )
}

/// Hides the value of each password-like parameter of a URL's query.
fn mask_query(text: &str) -> (String, bool) {
    let Some((path, query)) = text.split_once('?') else {
        return (text.to_owned(), false);
    };
    let mut hid = false;
    let params: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((k, _)) if password_like(&percent_decode(k).unwrap_or_else(|_| k.into())) => {
                hid = true;
                format!("{k}={MASK}")
            }
            _ => p.to_owned(),
        })
        .collect();
    (format!("{path}?{}", params.join("&")), hid)
}

/// Hides the value of each password-like key of a key/value string that can be read as one,
/// every key a plain name; one that cannot is left to [`mask_assignments`].
fn mask_pairs(text: &str) -> (String, bool) {
    // Keys that are not plain names mean the string is not what it seems (a key lost to an
    // escaped space, a URL read as a key): it is shown as written, for the last net to mask.
    let Some(pairs) = pairs(text).ok().filter(|p| p.iter().all(|(k, _)| plain(k))) else {
        return (text.to_owned(), false);
    };
    let mut hid = false;
    let shown = pairs
        .into_iter()
        .map(|(k, v)| {
            if password_like(&k) {
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
        .join(" ");
    (shown, hid)
}

/// The last net: a password-like word followed by `=` and anything but the mask (a pair that
/// could not be read, a pair quoted inside another value, a pair after a URL) hides everything
/// from it on.
fn mask_assignments(text: &str) -> (String, bool) {
    let word = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '%');
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        let Some(c) = rest.chars().next() else { break };
        if !word(c) {
            i += c.len_utf8();
            continue;
        }
        let len = rest.find(|c: char| !word(c)).unwrap_or(rest.len());
        let key = &rest[..len];
        let after = rest[len..].trim_start();
        if password_like(key)
            && let Some(value) = after.strip_prefix('=')
        {
            let value = value.trim_start();
            let masked_already = value.strip_prefix(MASK).is_some_and(|v| {
                v.chars()
                    .next()
                    .is_none_or(|c| c.is_whitespace() || c == '&')
            });
            if !masked_already {
                return (
                    format!("{}{key}={MASK} (rest hidden)", &text[..i]),
                    true,
                );
            }
        }
        i += len;
    }
    (text.to_owned(), false)
}

/// Whether `word` is a plain name (ASCII letters, digits, `_`, `-`), safe to show whatever the
/// string around it held.
fn plain(word: &str) -> bool {
    !word.is_empty()
        && word.len() <= 64
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// `reason` with each word it quotes between backquotes that the masked string does not show
/// replaced by `...`: a word read as a key may be a piece of a password (`'x password='pw`
/// reads `pw` as a key).
fn unquote_hidden(reason: &str, masked: &str) -> String {
    let mut out = String::new();
    let mut parts = reason.split('`');
    out.extend(parts.next());
    let mut quoted = true;
    for part in parts {
        out.push('`');
        let hidden = quoted && part.chars().any(char::is_alphanumeric) && !masked.contains(part);
        out.push_str(if hidden { "..." } else { part });
        quoted = !quoted;
    }
    out
}

/// `word` between backquotes when it is a plain name (letters, digits, `_`, `-`), safe to
/// show whatever the string around it held; otherwise where it starts.
fn shown(word: &str, at: usize) -> String {
    if plain(word) {
        format!("`{word}`")
    } else {
        format!("the word at character {}", at + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
    fn masks_strings_too_broken_to_parse() {
        for (text, want) in [
            (
                "postgres//hq:s3cret@127.0.0.1:5432/hq",
                "postgres//hq:***@127.0.0.1:5432/hq",
            ),
            (
                "postgres:/hq:s3cret@127.0.0.1:5432/hq",
                "postgres:***@127.0.0.1:5432/hq",
            ),
            ("hq:s3cret@127.0.0.1:5432/hq", "hq:***@127.0.0.1:5432/hq"),
            (
                "postgres://hq:se/cr?et@db/hq?sslmode=disable",
                "postgres://hq:***@db/hq?sslmode=disable",
            ),
            (
                "host=127.0.0.1 passwrd=s3cret dbname=hq",
                "host=127.0.0.1 passwrd=*** dbname=hq",
            ),
            ("host=h PWD = 's3 cret' x=1", "host=h PWD=*** x=1"),
            (
                "host=h options='-c password=s3cret'",
                "host=h options='-c password=*** (rest hidden)",
            ),
            (
                "postgres://db/hq password=s3cret",
                "postgres://db/hq password=*** (rest hidden)",
            ),
            (
                "postgres://db/hq?sslmode=disable&pwd=s3cret&x=1",
                "postgres://db/hq?sslmode=disable&pwd=***&x=1",
            ),
            ("host=h secret=\"s3cret", "host=h secret=***"),
        ] {
            assert_eq!(mask(text), want, "{text}");
            assert!(has_password(text), "{text}");
            let shown = match Target::parse(text) {
                Ok(t) => format!("{t} {t:?}"),
                Err(e) => e.to_string(),
            };
            assert!(!shown.contains("s3cret") && !shown.contains("cr?et"), "{shown}");
        }
        let err = Target::parse("host=127.0.0.1 passwrd=s3cret dbname=hq")
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with("unknown option `passwrd` (did you mean password?)"),
            "{err}"
        );
        let err = Target::parse("postgres//hq:s3cret@127.0.0.1:5432/hq")
            .unwrap_err()
            .to_string();
        assert!(err.contains("neither a URL"), "{err}");
    }

    /// The password every generated string holds, in a place that holds one.
    const MARKER: &str = "Zx9Qv7Lk";

    /// Anything, with the characters that connection strings and their quoting are made of.
    fn filler() -> impl Strategy<Value = String> {
        "[a-z0-9 :@/?&=%'\"\\\\.#_-]{0,12}"
    }

    /// Connection strings, well-formed or not, holding [`MARKER`] as a password: in user
    /// info, as the value of a password-like key, or as a password-like query parameter.
    fn holding_the_marker() -> impl Strategy<Value = String> {
        let prefix = prop::sample::select(vec![
            "",
            "postgres://",
            "postgresql://",
            "postgres//",
            "postgres:/",
            "postgres:",
            "host=127.0.0.1 ",
            "host=h user=",
            " ",
        ]);
        let key = prop::sample::select(vec![
            "password", "passwrd", "passwd", "pwd", "PASSWORD", "secret", "pass", "pasword",
        ]);
        let value = prop::sample::select(vec!["{}", "'{}'", "'a {}'", "\"{}\"", "'{}", "{} "]);
        let ws = prop::sample::select(vec!["", " ", "  "]);
        prop_oneof![
            (prefix.clone(), filler(), filler(), filler())
                .prop_map(|(p, a, b, c)| format!("{p}{a}:{MARKER}{b}@{c}")),
            (prefix, filler(), key.clone(), ws.clone(), ws, value, filler()).prop_map(
                |(p, a, k, w1, w2, v, b)| format!("{p}{a} {k}{w1}={w2}{}{b}", v.replace("{}", MARKER))
            ),
            (filler(), filler(), key, filler()).prop_map(|(a, c, k, d)| format!(
                "postgres://{a}/db?{c}&{k}={MARKER}{d}"
            )),
        ]
    }

    proptest::proptest! {
        #[test]
        fn a_password_is_never_shown_however_broken_the_string(text in holding_the_marker()) {
            let masked = mask(&text);
            prop_assert!(!masked.contains(MARKER), "{text:?} masked as {masked:?}");
            prop_assert!(has_password(&text), "{text:?}");
            match Target::parse(&text) {
                Ok(t) => prop_assert!(!format!("{t} {t:?}").contains(MARKER), "{text:?}"),
                Err(e) => {
                    let shown = format!("{e} {:?}", crate::failure::Failure::hint(&e));
                    prop_assert!(!shown.contains(MARKER), "{text:?}: {shown}");
                }
            }
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
