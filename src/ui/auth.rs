//! Who may ask: the access token a server listening off loopback requires on every request
//! (`Authorization: Bearer`, or the `hookq_token` cookie a visit to `?token=` sets), the CSRF
//! token every action form carries (both compared in constant time), and the site an action's
//! POST says it came from.

use std::io::Read as _;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::app::App;

/// The cookie that carries the access token.
pub(crate) const TOKEN_COOKIE: &str = "hookq_token";

/// A fresh random token: 32 bytes of the kernel's randomness, in hex.
pub fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(hex(&bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `a` and `b` are equal, in a time that depends on their lengths only.
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub(crate) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// The token a request presents: its bearer token, else its cookie.
fn presented(headers: &HeaderMap) -> Option<&str> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    bearer.or_else(|| cookie(headers, TOKEN_COOKIE))
}

/// The `token` parameter of a query string.
fn query_token(query: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == "token")
        .map(|(_, v)| percent_decode(v))
}

/// `%XX` and `+` decoded; a malformed escape is kept as it is, invalid UTF-8 replaced.
pub(crate) fn percent_decode(s: &str) -> String {
    let hexval = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => match (hexval(b[i + 1]), hexval(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h << 4 | l);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The authority (`host[:port]`, lowercase, without the scheme's default port) of an
/// absolute `http`/`https` URL or origin; `None` for anything else.
fn authority(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h).to_ascii_lowercase();
    let default = match scheme.as_str() {
        "http" => ":80",
        "https" => ":443",
        _ => return None,
    };
    Some(host.strip_suffix(default).unwrap_or(&host).to_owned())
}

/// The site a POST says it was sent from, when that is not this server: its `Origin`, or
/// without one its `Referer`, compared with the `Host` it was sent to (or the
/// `X-Forwarded-Host` a proxy in front sets, which a page of another site cannot). `Origin:
/// null` and no header at all say nothing: the view's own pages ask for no referrer, under which
/// a browser posts their forms with `Origin: null`; the form token still has to match.
pub(crate) fn foreign_site(headers: &HeaderMap) -> Option<String> {
    let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    let from = match text(header::ORIGIN) {
        Some(o) if o.trim() != "null" => o,
        Some(_) => return None,
        None => text(header::REFERER)?,
    };
    let ours = |h: Option<&str>| {
        h.map(|h| {
            let h = h.split(',').next().unwrap_or_default().trim().to_ascii_lowercase();
            h.strip_suffix(":80").map(str::to_owned).unwrap_or(h)
        })
    };
    let sent_from = authority(from);
    let to = [
        ours(text(header::HOST)),
        ours(headers.get("x-forwarded-host").and_then(|v| v.to_str().ok())),
    ];
    let same = sent_from.as_ref().is_some_and(|a| {
        to.iter().flatten().any(|h| h == a || h.strip_suffix(":443") == Some(a))
    });
    (!same).then(|| from.chars().take(200).collect())
}

/// Refuses, with 403, a form posted from another site ([`foreign_site`]), before its token is
/// even read: the actions are for the view's own pages.
pub(crate) async fn same_site_forms(req: Request, next: Next) -> Response {
    match foreign_site(req.headers()) {
        None => next.run(req).await,
        Some(from) => (
            StatusCode::FORBIDDEN,
            format!(
                "this form was sent from another site ({from}): hookq ui takes only its own pages' forms\n"
            ),
        )
            .into_response(),
    }
}

/// Lets a request through when the server needs no token or it presents the right one. A
/// `?token=` visit with the right token gets the cookie and is sent to the same page without
/// the token in its address; any other request without it gets 401.
pub(crate) async fn require_token(State(app): State<App>, req: Request, next: Next) -> Response {
    require(app.token(), req, next).await
}

/// [`require_token`] of `token`, the one a server's requests must present (none: anyone).
pub(crate) async fn require(token: Option<&str>, req: Request, next: Next) -> Response {
    let Some(token) = token else {
        return next.run(req).await;
    };
    if presented(req.headers()).is_some_and(|t| same(t.as_bytes(), token.as_bytes())) {
        return next.run(req).await;
    }
    let from_query = req.uri().query().and_then(query_token);
    if req.method() == axum::http::Method::GET
        && from_query.is_some_and(|t| same(t.as_bytes(), token.as_bytes()))
    {
        let mount = super::app::mount(&req);
        let outer = req
            .extensions()
            .get::<axum::extract::OriginalUri>()
            .map_or(req.uri().path(), |o| o.0.path());
        let page = outer.rsplit('/').next().unwrap_or_default();
        let target = if page.is_empty() { "./" } else { page };
        let cookie = format!(
            "{TOKEN_COOKIE}={token}; Path={}; HttpOnly; SameSite=Strict",
            if mount.is_empty() { "/" } else { &mount }
        );
        let mut resp = (StatusCode::SEE_OTHER, [(header::LOCATION, target)]).into_response();
        if let Ok(v) = HeaderValue::from_str(&cookie) {
            resp.headers_mut().insert(header::SET_COOKIE, v);
        }
        return resp;
    }
    let mut resp = (
        StatusCode::UNAUTHORIZED,
        "this hookq ui needs its token: send `Authorization: Bearer <token>`, or open /?token=<token> once\n",
    )
        .into_response();
    resp.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"hookq\""),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_only_when_every_byte_is() {
        assert!(same(b"abc", b"abc"));
        assert!(same(b"", b""));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"ab"));
        assert!(!same(b"abc", b""));
    }

    #[test]
    fn tokens_are_random_hex() {
        let (a, b) = (random_token().unwrap(), random_token().unwrap());
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn cookies_and_query_tokens_are_read() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; hookq_token=xyz; b=2"),
        );
        assert_eq!(cookie(&h, "hookq_token"), Some("xyz"));
        assert_eq!(cookie(&h, "c"), None);
        assert_eq!(presented(&h), Some("xyz"));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer abc"));
        assert_eq!(presented(&h), Some("abc"));
        assert_eq!(query_token("a=1&token=ab%2Fc"), Some("ab/c".into()));
        assert_eq!(query_token("token=%zz%"), Some("%zz%".into()));
        assert_eq!(query_token("token=%e2%82"), Some("\u{fffd}".into()));
        assert_eq!(query_token("tok=1"), None);
    }

    #[test]
    fn a_post_from_another_site_is_told_apart() {
        let with = |pairs: &[(&'static str, &'static str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(*k, HeaderValue::from_static(v));
            }
            foreign_site(&h)
        };
        let host = ("host", "127.0.0.1:8080");
        for ours in [
            vec![host],
            vec![host, ("origin", "null")],
            vec![host, ("origin", "http://127.0.0.1:8080")],
            vec![host, ("referer", "http://127.0.0.1:8080/pending?task=t1")],
            vec![("host", "hooks.example"), ("origin", "https://hooks.example")],
            vec![("host", "hooks.example:80"), ("origin", "http://HOOKS.example")],
            vec![
                ("host", "127.0.0.1:9000"),
                ("x-forwarded-host", "hooks.example"),
                ("origin", "https://hooks.example"),
            ],
        ] {
            assert_eq!(with(&ours), None, "{ours:?}");
        }
        for theirs in [
            vec![host, ("origin", "http://evil.example")],
            vec![host, ("origin", "http://127.0.0.1:8081")],
            vec![host, ("origin", "https://127.0.0.1:8080.evil.example")],
            vec![host, ("referer", "http://evil.example/127.0.0.1:8080")],
            vec![host, ("origin", "file://")],
            vec![("origin", "http://127.0.0.1:8080")],
        ] {
            assert!(with(&theirs).is_some(), "{theirs:?}");
        }
    }
}
