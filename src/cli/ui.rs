//! `hookq ui`: the web view of the workspace's queue, served until Ctrl-C or SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::cli::error::Error;
use hookq::queue::fleet::Listing;
use hookq::ui::{self, Fleet, FleetConfig, Ui, UiConfig, UiError};

use super::app::Ctx;

/// Serve a web view of the queue: pending points, history, tasks, hook logs (live), JSON.
///
/// `-C DIR` more than once, or `--workspaces FILE`, shows several workspaces' queues: the view
/// opens on the list of them, each linked to its own pages under `/q/<name>/`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The address to listen on; the port 0 picks a free one. Off loopback, every request
    /// needs the token: `HOOKQ_UI_TOKEN`, else one made up and printed once.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Open the view in the desktop's browser (`xdg-open`).
    #[arg(long)]
    open: bool,
    /// Offer actions: retry a history row, drop a pending point, pause and resume the queue.
    #[arg(long)]
    actions: bool,
    /// Show the workspaces FILE lists, one directory a line (blank lines and `#` comments
    /// ignored, a relative path taken from FILE's folder), as `hookq hub --workspaces` reads
    /// it; a change to FILE shows at once.
    #[arg(long, value_name = "FILE")]
    workspaces: Option<PathBuf>,
}

/// What `hookq ui` serves: one queue's view, or the view of many.
enum View {
    One(Ui),
    Many(Fleet),
}

fn ui_error(e: UiError) -> Error {
    match e {
        UiError::Queue(e) => Error::Queue(e),
        UiError::Io { path, source } => Error::Io {
            what: "cannot read",
            path,
            source,
        },
        e => Error::Usage(e.to_string()),
    }
}

pub(super) fn run(ctx: &Ctx, args: Args) -> Result<(), Error> {
    let listing = match (&args.workspaces, ctx.dirs()) {
        (Some(_), [_, ..]) => {
            return Err(Error::Usage(
                "--workspaces lists the workspaces to show: -C cannot add to them".to_owned(),
            ));
        }
        (Some(file), []) => Some(Listing::File(std::path::absolute(file).map_err(
            |source| Error::Io {
                what: "cannot read the current directory",
                path: ".".into(),
                source,
            },
        )?)),
        (None, dirs @ [_, _, ..]) => Some(Listing::Dirs(dirs.to_vec())),
        (None, _) => None,
    };
    let token_env = std::env::var("HOOKQ_UI_TOKEN").ok();
    let token = ui::token_for(args.listen.ip(), token_env).map_err(|source| Error::Io {
        what: "cannot read",
        path: "/dev/urandom".into(),
        source,
    })?;
    let view = match listing {
        None => View::One(
            Ui::open(UiConfig {
                workspace: ctx.workspace()?,
                options: ctx.options()?,
                actions: args.actions,
                token: token.as_ref().map(|(t, _)| t.clone()),
            })
            .map_err(ui_error)?,
        ),
        Some(listing) => View::Many(
            Fleet::open(FleetConfig {
                listing,
                options: ctx.options()?,
                actions: args.actions,
                token: token.as_ref().map(|(t, _)| t.clone()),
            })
            .map_err(ui_error)?,
        ),
    };
    let (what, router) = match &view {
        View::One(ui) => (ui.place().to_owned(), ui.router()),
        View::Many(fleet) => {
            let n = fleet.len();
            (
                format!("{n} queue{}", if n == 1 { "" } else { "s" }),
                fleet.router(),
            )
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(8)
        .build()
        .map_err(|source| Error::Io {
            what: "cannot start the server's runtime for",
            path: "hookq ui".into(),
            source,
        })?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .map_err(|source| Error::Io {
                what: "cannot listen on",
                path: args.listen.to_string().into(),
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| Error::Io {
            what: "cannot listen on",
            path: args.listen.to_string().into(),
            source,
        })?;
        let stop = signalled();
        let url = format!("http://{addr}/");
        outln!("hookq ui: serving {what} at {url}");
        let mut open_url = url.clone();
        if let Some((t, generated)) = &token {
            if *generated {
                outln!(
                    "hookq ui: token {t} (send `Authorization: Bearer <token>`, or open {url}?token={t} once)"
                );
            }
            open_url = format!("{url}?token={t}");
        }
        super::output::stdout_wrote(std::io::Write::flush(&mut std::io::stdout()));
        if args.open {
            open(&open_url);
        }
        ui::serve(listener, router, token.is_none(), stop)
            .await
            .map_err(|source| Error::Io {
                what: "cannot serve on",
                path: addr.to_string().into(),
                source,
            })
    })
}

/// Resolves on the first SIGINT, SIGTERM or SIGHUP. SIGINT and SIGHUP that hookq was started
/// with ignored stay ignored (`nohup hookq ui &` outlives its terminal), as for `hookq hub`.
/// The handlers are installed at once, before the server says where it listens.
fn signalled() -> impl std::future::Future<Output = ()> + Send + 'static {
    use tokio::signal::unix::{Signal, SignalKind, signal};
    let handler = |sig: i32, kind: SignalKind| {
        if sig != libc::SIGTERM && hookq::exec::signal::is_ignored(sig) {
            return None;
        }
        signal(kind)
            .inspect_err(|e| tracing::warn!("cannot install a handler for signal {sig}: {e}"))
            .ok()
    };
    let mut int = handler(libc::SIGINT, SignalKind::interrupt());
    let mut term = handler(libc::SIGTERM, SignalKind::terminate());
    let mut hup = handler(libc::SIGHUP, SignalKind::hangup());
    async fn recv(s: &mut Option<Signal>) {
        match s {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending().await,
        }
    }
    async move {
        tokio::select! {
            () = recv(&mut int) => {}
            () = recv(&mut term) => {}
            () = recv(&mut hup) => {}
        }
    }
}

/// Opens `url` in the desktop's browser; a missing or failing opener is a warning.
fn open(url: &str) {
    match std::process::Command::new("xdg-open")
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(mut child) => {
            // Reaped in the background: the opener returns once the browser has the page.
            std::thread::spawn(move || child.wait());
        }
        Err(e) => errln!("warning: cannot open a browser (xdg-open): {e}; open {url} yourself"),
    }
}
