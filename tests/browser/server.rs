//! `hookq ui` run for real in a test's workspace, and what a test needs around it: its URL, the
//! pages it links to, and a recorder in the page that notes when something first shows.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::json;

use crate::support::browser::Browser;
use crate::support::queue::{Running, Ws};

/// A running `hookq ui`, killed when dropped.
pub struct Ui {
    running: Running,
    /// Its base URL, `http://127.0.0.1:PORT/`.
    pub base: String,
}

impl Ui {
    /// `hookq ui ARGS` in `ws`, with `env` added; returns once it printed its URL.
    pub fn start(ws: &Ws, args: &[&str], env: &[(&str, &str)]) -> Self {
        let crate::support::ui::Launched { running, url: base } =
            crate::support::ui::launch(ws, args, env);
        // Listening on every address, it is reached on loopback.
        let base = base.replace("://0.0.0.0:", "://127.0.0.1:");
        let base = if base.ends_with('/') {
            base
        } else {
            format!("{base}/")
        };
        Self { running, base }
    }

    /// The URL of `path` (relative, no leading `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path.trim_start_matches('/'))
    }

    /// Its stderr so far.
    pub fn stderr(&self) -> String {
        self.running.stderr_so_far()
    }

    /// Its stdout so far.
    pub fn stdout(&self) -> String {
        self.running.stdout_so_far()
    }
}

/// Now, in milliseconds since the epoch, on the clock the browser's `Date.now()` reads.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Marks the open document with a fresh token and starts a recorder in it that notes, as
/// `Date.now()`, the first moment an element matching `css` whose text holds `text` is in the
/// page. Reading it back ([`seen`]) also says whether the document is still the one marked: a
/// reload or a navigation loses the mark.
pub fn record_first(b: &Browser, name: &str, css: &str, text: &str) {
    b.execute(
        r#"const [name, css, text] = arguments;
window.__hookqSeen = window.__hookqSeen || {};
window.__hookqMark = window.__hookqMark || Math.random().toString(36).slice(2);
const check = () => {
  if (window.__hookqSeen[name]) return;
  for (const e of document.querySelectorAll(css)) {
    if (e.textContent.includes(text)) { window.__hookqSeen[name] = Date.now(); return; }
  }
};
new MutationObserver(check).observe(document.documentElement,
  { subtree: true, childList: true, characterData: true, attributes: true });
check();"#,
        vec![json!(name), json!(css), json!(text)],
    );
}

/// The mark [`record_first`] set on the open document (`None`: a document it never marked).
pub fn mark(b: &Browser) -> Option<String> {
    b.execute("return window.__hookqMark || null;", vec![])
        .as_str()
        .map(str::to_owned)
}

/// When the recorder `name` saw its element, if it did.
pub fn seen(b: &Browser, name: &str) -> Option<i64> {
    b.execute(
        "return (window.__hookqSeen && window.__hookqSeen[arguments[0]]) || null;",
        vec![json!(name)],
    )
    .as_i64()
}
