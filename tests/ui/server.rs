//! `hookq ui` started in the background on a scratch workspace, and plain HTTP requests to it.

use crate::support::queue::{HANG, Out, Running, Ws};

/// A running `hookq ui`.
pub struct Served {
    run: Running,
    /// Its base URL, `http://127.0.0.1:PORT/`.
    pub url: String,
    /// What it printed before serving.
    pub stdout: String,
    agent: ureq::Agent,
    /// Sent as `Authorization: Bearer` with every request when set.
    pub bearer: Option<String>,
}

/// A response: status, headers that matter here, body.
#[derive(Debug)]
pub struct Page {
    pub status: u16,
    pub location: Option<String>,
    pub set_cookie: Option<String>,
    pub content_type: Option<String>,
    pub csp: Option<String>,
    pub server_timing: Option<String>,
    pub body: String,
}

impl Page {
    /// Asserts status 200; returns the body.
    #[track_caller]
    pub fn ok(self) -> String {
        assert_eq!(self.status, 200, "{}", self.body);
        self.body
    }

    /// The body as JSON.
    #[track_caller]
    pub fn json(self) -> serde_json::Value {
        assert_eq!(self.status, 200, "{}", self.body);
        serde_json::from_str(&self.body).unwrap()
    }

    /// The content of `<main id="main">`, where every page has its content.
    #[track_caller]
    pub fn main(self) -> String {
        let body = self.ok();
        let start = body.find(r#"<main id="main""#).expect("a main#main");
        let end = body.find("</main>").expect("main ends");
        body[start..end].to_owned()
    }
}

impl Served {
    /// Starts `hookq ui ARGS` in `ws`; returns once it serves ([`crate::support::ui::launch`]).
    pub fn start(ws: &Ws, args: &[&str]) -> Served {
        Self::start_env(ws, args, &[])
    }

    /// [`Served::start`] with extra environment variables.
    pub fn start_env(ws: &Ws, args: &[&str], env: &[(&str, &str)]) -> Served {
        let crate::support::ui::Launched { running: run, url } =
            crate::support::ui::launch(ws, args, env);
        let stdout = run.stdout_so_far();
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(HANG))
            .build()
            .into();
        Served {
            run,
            url,
            stdout,
            agent,
            bearer: None,
        }
    }

    /// `url` with its host made `127.0.0.1` (for a server listening on `0.0.0.0`).
    pub fn via_loopback(&mut self) {
        let port = self.url.rsplit_once(':').unwrap().1.trim_end_matches('/');
        self.url = format!("http://127.0.0.1:{port}/");
    }

    fn page(resp: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Page {
        let mut resp = resp.unwrap();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .map(|v| v.to_str().unwrap().to_owned())
        };
        let (location, set_cookie, content_type, csp, server_timing) = (
            header("location"),
            header("set-cookie"),
            header("content-type"),
            header("content-security-policy"),
            header("server-timing"),
        );
        Page {
            status: resp.status().as_u16(),
            location,
            set_cookie,
            content_type,
            csp,
            server_timing,
            body: resp.body_mut().read_to_string().unwrap(),
        }
    }

    /// GET `path` (relative to the view's root), with these extra headers.
    pub fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> Page {
        let mut req = self.agent.get(format!("{}{path}", self.url));
        if let Some(t) = &self.bearer {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        Self::page(req.call())
    }

    /// GET `path` (relative to the view's root).
    pub fn get(&self, path: &str) -> Page {
        self.get_with(path, &[])
    }

    /// POST the form `fields` to `path`.
    pub fn post(&self, path: &str, fields: &[(&str, &str)]) -> Page {
        self.post_with(path, fields, &[])
    }

    /// POST the form `fields` to `path`, with these extra headers.
    pub fn post_with(&self, path: &str, fields: &[(&str, &str)], headers: &[(&str, &str)]) -> Page {
        let mut req = self.agent.post(format!("{}{path}", self.url));
        if let Some(t) = &self.bearer {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        Self::page(req.send_form(fields.iter().copied()))
    }

    /// Sends SIGTERM and asserts it ends with exit 0, saying nothing on stderr.
    pub fn stop(self) -> Out {
        self.stop_with(rustix::process::Signal::TERM).ok()
    }

    /// Sends `sig` and waits for it to end.
    pub fn stop_with(self, sig: rustix::process::Signal) -> Out {
        self.run.signal(sig);
        self.run.wait_within(HANG)
    }
}

/// The value of attribute `attr` on the first element after `marker` in `html`.
pub fn attr_after(html: &str, marker: &str, attr: &str) -> String {
    let at = html
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker} in {html}"));
    let rest = &html[at..];
    let key = format!("{attr}=\"");
    let start = rest.find(&key).unwrap() + key.len();
    rest[start..][..rest[start..].find('"').unwrap()].to_owned()
}

/// Every value of attribute `attr` in `html`.
pub fn attrs(html: &str, attr: &str) -> Vec<String> {
    let key = format!(" {attr}=\"");
    html.match_indices(&key)
        .map(|(i, _)| {
            let rest = &html[i + key.len()..];
            rest[..rest.find('"').unwrap()].to_owned()
        })
        .collect()
}
