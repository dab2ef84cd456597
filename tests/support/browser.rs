//! The tests' one WebDriver client: a headless Chromium driven over the W3C WebDriver protocol,
//! spoken with a plain HTTP client: `chromedriver` started on a free port of 127.0.0.1, one
//! session with a throwaway profile, and what a test needs of it (navigate, find by CSS, read
//! text, click, run a script, read the console's errors, take a screenshot). The session is
//! deleted and `chromedriver` with every browser process it started is killed when the
//! [`Browser`] drops, whether the test passed or panicked.
//!
//! It also holds the rule every browser test follows: [`Browser::start`] finds Debian's
//! `chromium` and `chromedriver` on `PATH`, and without them (or when the driver cannot be
//! started) it says `SKIPPED`, naming what is missing and how to install it, and gives `None`:
//! the test returns and passes, except under CI, where it fails ([`crate::support::skipped`]). No
//! test starts either program itself.

use std::cell::RefCell;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

use super::HANG;

use super::skipped;

/// The key under which WebDriver passes an element reference.
pub const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// The programs a browser test needs, found on `PATH`.
pub struct Programs {
    /// The Chromium binary.
    pub chromium: PathBuf,
    /// The matching `chromedriver`.
    pub chromedriver: PathBuf,
}

impl Programs {
    /// Both programs, or what is missing and how to install it.
    pub fn find() -> Result<Self, String> {
        let chromium = on_path("chromium")
            .ok_or("no `chromium` on PATH (Debian: apt-get install chromium chromium-driver)")?;
        let chromedriver = on_path("chromedriver")
            .ok_or("no `chromedriver` on PATH (Debian: apt-get install chromium-driver)")?;
        Ok(Self {
            chromium,
            chromedriver,
        })
    }
}

/// The first executable file called `name` in a folder of `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// A WebDriver error: its code (`no such element`, …) and message.
#[derive(Debug, Clone)]
pub struct WdError {
    /// The error code.
    pub error: String,
    /// The driver's message.
    pub message: String,
}

impl std::fmt::Display for WdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.error, self.message)
    }
}

/// One console entry the page logged.
#[derive(Debug, Clone)]
pub struct ConsoleEntry {
    /// `SEVERE`, `WARNING`, `INFO`, …
    pub level: String,
    /// The text, prefixed by where it came from.
    pub message: String,
}

/// The browsers of this test binary take turns here: any number run at once, but a test that
/// measures time runs its browser alone ([`Browser::start_alone`]), so that the others' work
/// does not weigh on what it measures.
static TURNS: RwLock<()> = RwLock::new(());

/// A browser's place in [`TURNS`]: shared or alone.
enum Turn {
    Shared(#[allow(dead_code)] RwLockReadGuard<'static, ()>),
    Alone(#[allow(dead_code)] RwLockWriteGuard<'static, ()>),
}

impl Turn {
    fn take(alone: bool) -> Self {
        // A test that failed while holding its turn still gave it back.
        if alone {
            Self::Alone(TURNS.write().unwrap_or_else(|e| e.into_inner()))
        } else {
            Self::Shared(TURNS.read().unwrap_or_else(|e| e.into_inner()))
        }
    }
}

/// `chromedriver` and one browser session in it.
pub struct Browser {
    agent: ureq::Agent,
    driver_url: String,
    session: String,
    driver: Child,
    profile: tempfile::TempDir,
    console: RefCell<Vec<ConsoleEntry>>,
    // Last, so that it is given back once the browser is gone.
    _turn: Turn,
}

impl Browser {
    /// A browser for `test`, or `None` once [`skipped`] has said why this machine cannot run one.
    pub fn start(test: &str) -> Option<Self> {
        Self::start_turn(test, false)
    }

    /// A browser for `test` that runs alone in this binary: it waits for the others to end, and
    /// none starts until it has ended.
    pub fn start_alone(test: &str) -> Option<Self> {
        Self::start_turn(test, true)
    }

    fn start_turn(test: &str, alone: bool) -> Option<Self> {
        let started = Programs::find().and_then(|p| Self::start_with(&p, Turn::take(alone)));
        match started {
            Ok(browser) => Some(browser),
            Err(why) => {
                skipped(test, &why);
                None
            }
        }
    }

    /// Starts `chromedriver` on a free port, waits until it is ready and opens a session. A
    /// driver that loses the race for its port to another process is started again. `Err` only
    /// when the driver cannot be started at all: one that starts and then fails is the test's
    /// failure.
    fn start_with(programs: &Programs, turn: Turn) -> Result<Self, String> {
        let profile = tempfile::Builder::new()
            .prefix("hookq-chromium-")
            .tempdir()
            .unwrap();
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(HANG))
            .build()
            .into();
        let mut tries = 0;
        let (driver, driver_url) = loop {
            tries += 1;
            let port = free_port();
            let log = std::fs::File::create(profile.path().join("chromedriver.log")).unwrap();
            let mut cmd = Command::new(&programs.chromedriver);
            cmd.arg(format!("--port={port}"))
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                // Its own process group, so that dropping the browser ends every process the
                // driver started (the browser and its helpers) with one signal.
                .process_group(0);
            let mut child = cmd.spawn().map_err(|e| {
                format!(
                    "`{}` cannot be started: {e} (Debian: apt-get install chromium-driver)",
                    programs.chromedriver.display()
                )
            })?;
            let url = format!("http://127.0.0.1:{port}");
            match wait_ready(&agent, &url, &mut child) {
                Ok(()) => break (child, url),
                Err(why) => {
                    kill_group(&mut child);
                    let log = std::fs::read_to_string(profile.path().join("chromedriver.log"))
                        .unwrap_or_default();
                    assert!(tries < 3, "chromedriver did not start: {why}\n{log}");
                }
            }
        };
        let user_data = profile.path().join("profile");
        let caps = json!({
            "capabilities": { "alwaysMatch": {
                "browserName": "chrome",
                // An alert stays open for the test to see (and say so) instead of being
                // dismissed behind its back.
                "unhandledPromptBehavior": "ignore",
                "goog:loggingPrefs": { "browser": "ALL" },
                "goog:chromeOptions": {
                    "binary": programs.chromium.display().to_string(),
                    "args": [
                        "--headless=new",
                        "--no-sandbox",
                        "--disable-gpu",
                        "--disable-dev-shm-usage",
                        "--disable-quic",
                        "--no-first-run",
                        "--disable-background-networking",
                        "--disable-component-update",
                        "--disable-sync",
                        format!("--user-data-dir={}", user_data.display()),
                        "--window-size=1280,900",
                    ],
                },
            }}
        });
        let mut browser = Self {
            agent,
            driver_url,
            session: String::new(),
            driver,
            profile,
            console: RefCell::new(Vec::new()),
            _turn: turn,
        };
        let created = browser
            .request("POST", "/session", Some(caps))
            .unwrap_or_else(|e| panic!("no browser session: {e}\n{}", browser.driver_log()));
        browser.session = created["sessionId"]
            .as_str()
            .expect("a session id")
            .to_owned();
        browser.command(
            "POST",
            "/timeouts",
            json!({ "pageLoad": HANG.as_millis() as u64, "script": HANG.as_millis() as u64, "implicit": 0 }),
        );
        Ok(browser)
    }

    /// The driver's own log so far, for a failure's message.
    pub fn driver_log(&self) -> String {
        std::fs::read_to_string(self.profile.path().join("chromedriver.log")).unwrap_or_default()
    }

    /// The browser's profile folder (its `--user-data-dir`).
    pub fn profile_dir(&self) -> PathBuf {
        self.profile.path().join("profile")
    }

    /// The pid of `chromedriver`, the leader of the process group the browser runs in.
    pub fn driver_pid(&self) -> i32 {
        self.driver.id() as i32
    }

    /// A request to the driver itself (`path` from its root); the value of its answer, or the
    /// WebDriver error it gave.
    fn request(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, WdError> {
        let url = format!("{}{path}", self.driver_url);
        let transport = |e: ureq::Error| WdError {
            error: "transport".into(),
            message: format!("{method} {path}: {e}"),
        };
        let mut resp = match (method, body) {
            ("GET", _) => self.agent.get(&url).call(),
            ("DELETE", _) => self.agent.delete(&url).call(),
            (_, body) => self
                .agent
                .post(&url)
                .send_json(body.unwrap_or_else(|| json!({}))),
        }
        .map_err(transport)?;
        let status = resp.status();
        let bytes = resp
            .body_mut()
            .with_config()
            .limit(256 * 1024 * 1024)
            .read_to_vec()
            .map_err(transport)?;
        let answer: Value = serde_json::from_slice(&bytes).map_err(|e| WdError {
            error: "bad answer".into(),
            message: format!("{method} {path}: {status}: {e}"),
        })?;
        let value = answer.get("value").cloned().unwrap_or(Value::Null);
        if status.is_success() {
            // A new session's id is beside its capabilities, inside `value`.
            Ok(value)
        } else {
            Err(WdError {
                error: value["error"].as_str().unwrap_or("unknown").to_owned(),
                message: value["message"]
                    .as_str()
                    .unwrap_or_default()
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_owned(),
            })
        }
    }

    /// A command of this session (`path` below `/session/{id}`), or its error.
    pub fn try_command(&self, method: &str, path: &str, body: Value) -> Result<Value, WdError> {
        let path = format!("/session/{}{path}", self.session);
        self.request(method, &path, Some(body))
    }

    /// A command of this session; a WebDriver error fails the test.
    #[track_caller]
    pub fn command(&self, method: &str, path: &str, body: Value) -> Value {
        self.try_command(method, path, body)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    /// Opens `url` and waits for it to load.
    #[track_caller]
    pub fn goto(&self, url: &str) {
        self.command("POST", "/url", json!({ "url": url }));
    }

    /// Reloads the page.
    #[track_caller]
    pub fn refresh(&self) {
        self.command("POST", "/refresh", json!({}));
    }

    /// The page's URL.
    #[track_caller]
    pub fn url(&self) -> String {
        self.command("GET", "/url", json!({}))
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// The page's title.
    #[track_caller]
    pub fn title(&self) -> String {
        self.command("GET", "/title", json!({}))
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// The page's HTML as the browser holds it now.
    #[track_caller]
    pub fn source(&self) -> String {
        self.command("GET", "/source", json!({}))
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Every element matching `css`, in document order.
    #[track_caller]
    pub fn find_all(&self, css: &str) -> Vec<Element<'_>> {
        let found = self.command(
            "POST",
            "/elements",
            json!({ "using": "css selector", "value": css }),
        );
        found
            .as_array()
            .unwrap()
            .iter()
            .map(|e| self.element(e))
            .collect()
    }

    /// The first element matching `css`, if any.
    #[track_caller]
    pub fn try_find(&self, css: &str) -> Option<Element<'_>> {
        self.find_all(css).into_iter().next()
    }

    /// The first element matching `css`; none fails the test.
    #[track_caller]
    pub fn find(&self, css: &str) -> Element<'_> {
        self.try_find(css)
            .unwrap_or_else(|| panic!("no element matches {css:?} on {}", self.url()))
    }

    fn element(&self, reference: &Value) -> Element<'_> {
        Element {
            browser: self,
            id: reference[ELEMENT_KEY]
                .as_str()
                .unwrap_or_else(|| panic!("not an element reference: {reference}"))
                .to_owned(),
        }
    }

    /// Runs `script` (a function body; `arguments` holds `args`) in the page and returns what
    /// it returns.
    #[track_caller]
    pub fn execute(&self, script: &str, args: Vec<Value>) -> Value {
        self.command(
            "POST",
            "/execute/sync",
            json!({ "script": script, "args": args }),
        )
    }

    /// The text content of the first element matching `css` (whatever its visibility), `None`
    /// when nothing matches. Read by a script, so a part of the page swapped meanwhile is no
    /// stale reference.
    #[track_caller]
    pub fn text_of(&self, css: &str) -> Option<String> {
        let v = self.execute(
            "const e = document.querySelector(arguments[0]); return e ? e.textContent : null;",
            vec![json!(css)],
        );
        v.as_str().map(str::to_owned)
    }

    /// The text content of every element matching `css`, read by a script: a live page may swap
    /// its `#main` between finding elements and reading them one by one.
    #[track_caller]
    pub fn texts_of(&self, css: &str) -> Vec<String> {
        let v = self.execute(
            "return Array.from(document.querySelectorAll(arguments[0])).map(e => e.textContent);",
            vec![json!(css)],
        );
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The resolved address of the first link matching `css` whose text holds `text`, read by
    /// a script (see [`texts_of`](Self::texts_of)).
    #[track_caller]
    pub fn href_of(&self, css: &str, text: &str) -> Option<String> {
        self.execute(
            "const a = Array.from(document.querySelectorAll(arguments[0]))
                 .find(e => e.textContent.includes(arguments[1]));
             return a ? a.href : null;",
            vec![json!(css), json!(text)],
        )
        .as_str()
        .map(str::to_owned)
    }

    /// Whether an element matching `css` has `text` in its text content, checked by a script.
    #[track_caller]
    pub fn any_text(&self, css: &str, text: &str) -> bool {
        self.execute(
            "return Array.from(document.querySelectorAll(arguments[0]))
                 .some(e => e.textContent.includes(arguments[1]));",
            vec![json!(css), json!(text)],
        ) == json!(true)
    }

    /// How many elements match `css`, counted by a script.
    #[track_caller]
    pub fn count(&self, css: &str) -> usize {
        self.execute(
            "return document.querySelectorAll(arguments[0]).length;",
            vec![json!(css)],
        )
        .as_u64()
        .unwrap() as usize
    }

    /// The text of the open alert, confirm or prompt, if one is open.
    #[track_caller]
    pub fn alert_text(&self) -> Option<String> {
        match self.try_command("GET", "/alert/text", json!({})) {
            Ok(v) => Some(v.as_str().unwrap_or_default().to_owned()),
            Err(e) if e.error == "no such alert" => None,
            Err(e) => panic!("GET /alert/text: {e}"),
        }
    }

    /// Dismisses the open alert.
    #[track_caller]
    pub fn dismiss_alert(&self) {
        self.command("POST", "/alert/dismiss", json!({}));
    }

    /// Runs a Chrome DevTools Protocol command in the page.
    #[track_caller]
    pub fn cdp(&self, cmd: &str, params: Value) -> Value {
        self.command(
            "POST",
            "/goog/cdp/execute",
            json!({ "cmd": cmd, "params": params }),
        )
    }

    /// Emulates the reader's choice of a dark (or light) colour scheme, as
    /// `prefers-color-scheme` sees it.
    #[track_caller]
    pub fn prefer_dark(&self, dark: bool) {
        self.cdp(
            "Emulation.setEmulatedMedia",
            json!({ "features": [{
                "name": "prefers-color-scheme",
                "value": if dark { "dark" } else { "light" },
            }]}),
        );
    }

    /// Everything the pages logged to the console since the session began.
    #[track_caller]
    pub fn console(&self) -> Vec<ConsoleEntry> {
        let new = self.command("POST", "/se/log", json!({ "type": "browser" }));
        let mut all = self.console.borrow_mut();
        for e in new.as_array().unwrap() {
            all.push(ConsoleEntry {
                level: e["level"].as_str().unwrap_or_default().to_owned(),
                message: e["message"].as_str().unwrap_or_default().to_owned(),
            });
        }
        all.clone()
    }

    /// The console's errors (uncaught exceptions, `console.error`, resources that failed to
    /// load) since the session began.
    #[track_caller]
    pub fn console_errors(&self) -> Vec<String> {
        self.console()
            .into_iter()
            .filter(|e| e.level == "SEVERE")
            .map(|e| e.message)
            .collect()
    }

    /// Fails the test, naming `what`, if the console holds an error.
    #[track_caller]
    pub fn assert_no_console_errors(&self, what: &str) {
        let errors = self.console_errors();
        assert!(errors.is_empty(), "console errors on {what}: {errors:#?}");
    }

    /// A screenshot of the window as PNG bytes.
    #[track_caller]
    pub fn screenshot_png(&self) -> Vec<u8> {
        let b64 = self.command("GET", "/screenshot", json!({}));
        base64::engine::general_purpose::STANDARD
            .decode(b64.as_str().unwrap())
            .unwrap()
    }

    /// Saves a screenshot as `target/ui-screens/<name>.png`; returns its path.
    #[track_caller]
    pub fn screenshot(&self, name: &str) -> PathBuf {
        let dir = screens_dir();
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, self.screenshot_png()).unwrap();
        path
    }

    /// Polls `f` until it gives `Some`; fails the test, naming `what` and the page, after
    /// [`super::HANG`].
    #[track_caller]
    pub fn wait_for<T>(&self, what: &str, mut f: impl FnMut(&Self) -> Option<T>) -> T {
        super::poll(
            what,
            super::POLL,
            || f(self),
            || format!("on {}", self.url()),
        )
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let path = format!("/session/{}", self.session);
            let _ = self.request("DELETE", &path, None);
        }
        kill_group(&mut self.driver);
    }
}

/// An element of the page.
pub struct Element<'b> {
    browser: &'b Browser,
    id: String,
}

impl Element<'_> {
    fn path(&self, rest: &str) -> String {
        format!("/element/{}{rest}", self.id)
    }

    /// Its rendered text.
    #[track_caller]
    pub fn text(&self) -> String {
        self.browser
            .command("GET", &self.path("/text"), json!({}))
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// An attribute's value, `None` when it has none.
    #[track_caller]
    pub fn attr(&self, name: &str) -> Option<String> {
        self.browser
            .command("GET", &self.path(&format!("/attribute/{name}")), json!({}))
            .as_str()
            .map(str::to_owned)
    }

    /// A property's value as the page sees it (`href` resolved against the page's base).
    #[track_caller]
    pub fn property(&self, name: &str) -> serde_json::Value {
        self.browser
            .command("GET", &self.path(&format!("/property/{name}")), json!({}))
    }

    /// Its tag name, lowercase.
    #[track_caller]
    pub fn tag(&self) -> String {
        self.browser
            .command("GET", &self.path("/name"), json!({}))
            .as_str()
            .unwrap()
            .to_lowercase()
    }

    /// Clicks it, as a person would (scrolled into view first).
    #[track_caller]
    pub fn click(&self) {
        self.browser
            .command("POST", &self.path("/click"), json!({}));
    }

    /// Types `text` into it.
    #[track_caller]
    pub fn send_keys(&self, text: &str) {
        self.browser
            .command("POST", &self.path("/value"), json!({ "text": text }));
    }

    /// The elements inside it matching `css`.
    #[track_caller]
    pub fn find_all(&self, css: &str) -> Vec<Element<'_>> {
        let found = self.browser.command(
            "POST",
            &self.path("/elements"),
            json!({ "using": "css selector", "value": css }),
        );
        found
            .as_array()
            .unwrap()
            .iter()
            .map(|e| self.browser.element(e))
            .collect()
    }

    /// The first element inside it matching `css`; none fails the test.
    #[track_caller]
    pub fn find(&self, css: &str) -> Element<'_> {
        self.find_all(css)
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("no {css:?} inside the element"))
    }

    /// Its reference, to pass to [`Browser::execute`].
    pub fn as_arg(&self) -> Value {
        json!({ ELEMENT_KEY: self.id })
    }
}

/// `target/ui-screens/`, where the screenshots go.
pub fn screens_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ui-screens")
}

/// A port of 127.0.0.1 that was free a moment ago.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until the driver at `url` says it is ready; `Err` when it exits or takes too long.
fn wait_ready(agent: &ureq::Agent, url: &str, child: &mut Child) -> Result<(), String> {
    super::within(HANG, Duration::from_millis(50), || {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(Err(format!("it exited: {status}")));
        }
        if let Ok(mut resp) = agent.get(&format!("{url}/status")).call()
            && let Ok(v) = resp.body_mut().read_json::<Value>()
            && v["value"]["ready"] == Value::Bool(true)
        {
            return Some(Ok(()));
        }
        None
    })
    .unwrap_or_else(|| Err(format!("not ready after {HANG:?}")))
}

/// Kills `child`'s process group (it leads one of its own) and reaps it.
fn kill_group(child: &mut Child) {
    if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}
