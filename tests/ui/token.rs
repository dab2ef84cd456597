//! The token: off loopback every request needs it, as a bearer token or the cookie a visit to
//! `?token=` sets; one is made up and printed once unless `HOOKQ_UI_TOKEN` gives it. On
//! loopback no token is asked, and a request for another host name is refused.

use crate::pages::moved;
use crate::server::Served;

#[test]
fn off_loopback_every_request_needs_the_token() {
    let ws = moved();
    let mut ui = Served::start(&ws, &["--listen", "0.0.0.0:0"]);
    assert!(ui.url.starts_with("http://0.0.0.0:"), "{}", ui.url);
    let line = ui
        .stdout
        .lines()
        .find(|l| l.starts_with("hookq ui: token "))
        .unwrap_or_else(|| panic!("no token line: {}", ui.stdout));
    let token = line.split_whitespace().nth(3).unwrap().to_owned();
    assert_eq!(token.len(), 64, "{line}");
    ui.via_loopback();
    for path in [
        "",
        "pending",
        "api/pending",
        "assets/style.css",
        "task/t1",
        "nope",
    ] {
        let page = ui.get(path);
        assert_eq!(page.status, 401, "{path}: {}", page.body);
        assert!(
            page.csp.is_some(),
            "{path}: a refusal is kept to itself too"
        );
        assert!(!page.body.contains("t2"));
    }
    let wrong = ui.get_with("", &[("authorization", "Bearer 0123")]);
    assert_eq!(wrong.status, 401);
    let cookie = ui.get_with("pending", &[("cookie", "hookq_token=nope")]);
    assert_eq!(cookie.status, 401);
    assert_eq!(ui.get(&format!("?token={}", &token[1..])).status, 401);

    let bearer = format!("Bearer {token}");
    assert!(
        ui.get_with("pending", &[("authorization", &bearer)])
            .main()
            .contains("t2")
    );

    let visit = ui.get(&format!("?token={token}"));
    assert_eq!(visit.status, 303);
    assert_eq!(visit.location.as_deref(), Some("./"));
    let set = visit.set_cookie.unwrap();
    assert!(set.starts_with(&format!("hookq_token={token};")), "{set}");
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    let with_cookie = format!("hookq_token={token}");
    assert!(
        ui.get_with("pending", &[("cookie", &with_cookie)])
            .main()
            .contains("t2")
    );
    ui.stop();
}

#[test]
fn the_token_can_come_from_the_environment() {
    let ws = moved();
    let mut ui = Served::start_env(
        &ws,
        &["--listen", "0.0.0.0:0"],
        &[("HOOKQ_UI_TOKEN", "s3cret-token")],
    );
    assert!(
        !ui.stdout.contains("token"),
        "a given token is not printed: {}",
        ui.stdout
    );
    ui.via_loopback();
    assert_eq!(ui.get("").status, 401);
    ui.bearer = Some("s3cret-token".into());
    assert_eq!(ui.get("").status, 200);
    ui.stop();
}

#[test]
fn loopback_needs_no_token_and_answers_loopback_names_only() {
    let ws = moved();
    let ui = Served::start(&ws, &[]);
    assert_eq!(ui.get("").status, 200);
    let port = ui.url.rsplit_once(':').unwrap().1.trim_end_matches('/');
    let localhost = format!("localhost:{port}");
    assert_eq!(ui.get_with("", &[("host", &localhost)]).status, 200);
    let rebound = ui.get_with("", &[("host", "evil.example")]);
    assert_eq!(rebound.status, 421, "{}", rebound.body);
    ui.stop();
}
