//! A throwaway PostgreSQL cluster for this test binary: made once with `initdb` in a temp dir,
//! listening on a unix socket in that dir and on a free loopback port, with TLS on (a CA and a
//! server certificate made here with the `openssl` CLI), and stopped and removed when the
//! binary's process ends, however it ends.
//!
//! The server runs under a small `sh` watchdog that reads its stdin, a pipe whose write end
//! only this process holds: when the process exits (or is killed), the kernel closes the pipe,
//! the watchdog's `read` returns, and it stops the server and removes the dir. A static with a
//! `Drop` would not do: statics are never dropped at exit.
//!
//! PostgreSQL refuses to run as root: run as root (as CI does), the cluster belongs to the
//! `postgres` user and every server command runs through `setpriv`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The password of the `hookq` role the tests connect as.
pub const PASSWORD: &str = "s3cret-Pa55word";

/// The running cluster.
pub struct Cluster {
    /// The temp dir: data, socket, certificates, log.
    pub dir: PathBuf,
    /// The loopback TCP port.
    pub port: u16,
    /// The CA that signed the server's certificate (PEM).
    pub ca: PathBuf,
    /// Another CA, which signed nothing the server has.
    pub other_ca: PathBuf,
    watchdog: Mutex<(Child, ChildStdin)>,
    databases: Mutex<u32>,
    /// The server's command line, to start it again after [`Cluster::stop`].
    argv: Vec<String>,
}

static CLUSTER: OnceLock<Cluster> = OnceLock::new();

/// The cluster, started on first use.
pub fn cluster() -> &'static Cluster {
    CLUSTER.get_or_init(Cluster::start)
}

/// A cluster of the caller's own, for a test that stops the server, so that the other tests
/// of the binary keep theirs; stopped and removed when the process ends, as the shared one.
pub fn own_cluster() -> Cluster {
    Cluster::start()
}

/// How a cluster writes: the tests' clusters skip every flush to disk (a test proves what is
/// committed, never that it survives power loss), the bench's flushes as a production server
/// does, so that its commits cost what a durable commit costs.
// The bench (which includes this file) starts a durable one; the tests never do.
#[allow(dead_code)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// `fsync=off`, `synchronous_commit=off`, `full_page_writes=off`.
    Off,
    /// PostgreSQL's defaults: `fsync=on`, `synchronous_commit=on`, `full_page_writes=on`.
    Full,
}

/// A cluster of the caller's own in `parent` (the system temp dir when `None`), with
/// `durability`; stopped and removed when the process ends.
#[allow(dead_code)]
pub fn cluster_with(parent: Option<&Path>, durability: Durability) -> Cluster {
    Cluster::start_in(parent, durability, MAX_CONNECTIONS)
}

/// [`cluster_with`], taking up to `max_connections` connections at once rather than
/// [`MAX_CONNECTIONS`]: the bench's hub of many queues holds connections per queue.
#[allow(dead_code)]
pub fn cluster_sized(
    parent: Option<&Path>,
    durability: Durability,
    max_connections: usize,
) -> Cluster {
    Cluster::start_in(parent, durability, max_connections)
}

/// How many connections a cluster takes at once.
const MAX_CONNECTIONS: usize = 200;

/// `(uid, gid)` of the `postgres` user when this process runs as root, else `None`.
fn server_user() -> Option<(u32, u32)> {
    if rustix::process::geteuid().as_raw() != 0 {
        return None;
    }
    let id = |flag: &str| -> u32 {
        let out = Command::new("id")
            .args([flag, "postgres"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "running as root needs a `postgres` user (Debian's postgresql package makes one)"
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    Some((id("-u"), id("-g")))
}

/// The newest `/usr/lib/postgresql/<version>/bin` holding `initdb`, or what is missing and how
/// to install it.
pub fn find_bin_dir() -> Result<PathBuf, String> {
    const MISSING: &str = "no PostgreSQL server binaries (/usr/lib/postgresql/*/bin/initdb; Debian: apt-get install postgresql)";
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|_| MISSING.to_owned())?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found
        .pop()
        .map(|(_, bin)| bin)
        .ok_or_else(|| MISSING.to_owned())
}

/// The server binaries' folder; their absence fails the caller (tests check
/// [`find_bin_dir`] first).
fn bin_dir() -> PathBuf {
    find_bin_dir().unwrap_or_else(|why| panic!("{why}"))
}

/// A command that runs `program` as the server's user.
fn as_server(program: &Path, user: Option<(u32, u32)>) -> Command {
    match user {
        Some(_) => {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=postgres", "--regid=postgres", "--init-groups"])
                .arg(program);
            c
        }
        None => Command::new(program),
    }
}

fn run(mut c: Command, what: &str) {
    let out = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn openssl(dir: &Path, args: &[&str]) {
    let mut c = Command::new("openssl");
    c.current_dir(dir).args(args);
    run(c, &format!("openssl {}", args.join(" ")));
}

/// A CA named `name` in `dir`: `<name>.pem` and `<name>.key`.
fn make_ca(dir: &Path, name: &str) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.pem"),
            "-subj",
            &format!("/CN={name}"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
    );
}

/// The server's key and certificate, signed by `ca`, for `localhost` and 127.0.0.1.
fn make_server_cert(dir: &Path) {
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ],
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-out",
            "server.pem",
            "-extfile",
            "server.ext",
        ],
    );
}

fn chown_tree(path: &Path, user: Option<(u32, u32)>) {
    if let Some((uid, gid)) = user {
        std::os::unix::fs::chown(path, Some(uid), Some(gid)).unwrap();
        if path.is_dir() {
            for e in std::fs::read_dir(path).unwrap() {
                chown_tree(&e.unwrap().path(), user);
            }
        }
    }
}

impl Cluster {
    fn start() -> Self {
        Self::start_in(None, Durability::Off, MAX_CONNECTIONS)
    }

    fn start_in(parent: Option<&Path>, durability: Durability, max_connections: usize) -> Self {
        let user = server_user();
        let bin = bin_dir();
        let mut made = tempfile::Builder::new();
        made.prefix("hookq-pg-");
        let dir = match parent {
            Some(parent) => made.tempdir_in(parent),
            None => made.tempdir(),
        }
        .unwrap()
        .keep();
        if user.is_some() {
            // The server's user must reach its dir through every folder above it.
            let mut up = dir.parent();
            while let Some(folder) = up {
                let mode = std::fs::metadata(folder).unwrap().permissions().mode();
                if mode & 0o001 == 0 {
                    std::fs::set_permissions(folder, std::fs::Permissions::from_mode(mode | 0o001))
                        .unwrap();
                }
                up = folder.parent();
            }
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        make_ca(&dir, "ca");
        make_ca(&dir, "other_ca");
        make_server_cert(&dir);
        std::fs::set_permissions(
            dir.join("server.key"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        chown_tree(&dir, user);
        // The certificates stay readable by this process (root, or the same user).
        let data = dir.join("data");
        let mut initdb = as_server(&bin.join("initdb"), user);
        initdb.args([
            "-D",
            data.to_str().unwrap(),
            "-U",
            "postgres",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "--no-sync",
            "--no-instructions",
            "-E",
            "UTF8",
            "--locale=C",
        ]);
        run(initdb, "initdb");

        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let server = as_server(&bin.join("postgres"), user);
        let mut argv: Vec<String> = std::iter::once(server.get_program())
            .chain(server.get_args())
            .map(|a| a.to_str().unwrap().to_owned())
            .collect();
        let d = dir.to_str().unwrap();
        let flushed = |setting: &str| -> &'static str {
            match (durability, setting) {
                (Durability::Full, "fsync") => "fsync=on",
                (Durability::Full, "synchronous_commit") => "synchronous_commit=on",
                (Durability::Full, _) => "full_page_writes=on",
                (Durability::Off, "fsync") => "fsync=off",
                (Durability::Off, "synchronous_commit") => "synchronous_commit=off",
                (Durability::Off, _) => "full_page_writes=off",
            }
        };
        argv.extend(
            [
                "-D",
                &format!("{d}/data"),
                "-k",
                d,
                "-p",
                &port.to_string(),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "ssl=on",
                "-c",
                &format!("ssl_cert_file={d}/server.pem"),
                "-c",
                &format!("ssl_key_file={d}/server.key"),
                "-c",
                flushed("fsync"),
                "-c",
                flushed("synchronous_commit"),
                "-c",
                flushed("full_page_writes"),
                "-c",
                &format!("max_connections={max_connections}"),
                "-c",
                "log_min_messages=warning",
            ]
            .map(str::to_owned),
        );
        // The server in the background; the watchdog waits for this process's end (its stdin
        // closing), then stops the server (fast shutdown) and removes the dir. A server started
        // again by `start_again` is not its child: the pid in `postmaster.pid` finds it.
        let mut watchdog = Command::new("/bin/sh")
            .args([
                "-c",
                r#"dir=$1; shift; "$@" </dev/null >"$dir/server.log" 2>&1 & pid=$!
                   read -r _; kill -INT "$pid"; wait "$pid"
                   if [ -f "$dir/data/postmaster.pid" ]; then
                       p=$(head -n 1 "$dir/data/postmaster.pid")
                       kill -INT "$p"; while kill -0 "$p" 2>/dev/null; do sleep 0.1; done
                   fi
                   rm -rf "$dir""#,
                "watchdog",
                d,
            ])
            .args(&argv[..])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = watchdog.stdin.take().unwrap();
        let cluster = Cluster {
            ca: dir.join("ca.pem"),
            other_ca: dir.join("other_ca.pem"),
            dir,
            port,
            watchdog: Mutex::new((watchdog, stdin)),
            databases: Mutex::new(0),
            argv,
        };
        cluster.wait_ready();
        let mut admin = cluster.admin("postgres");
        admin
            .batch_execute(&format!(
                "CREATE ROLE hookq LOGIN CREATEDB PASSWORD '{PASSWORD}'"
            ))
            .unwrap();
        cluster
    }

    /// The running server's pid, from `postmaster.pid`.
    fn server_pid(&self) -> Option<i32> {
        let text = std::fs::read_to_string(self.dir.join("data/postmaster.pid")).ok()?;
        text.lines().next()?.trim().parse().ok()
    }

    /// Stops the server (fast shutdown: every connection is ended) and waits for it to be gone.
    pub fn stop(&self) {
        let pid = self.server_pid().expect("the server runs");
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid).unwrap(),
            rustix::process::Signal::INT,
        )
        .unwrap();
        let stopped =
            crate::support::within(crate::support::HANG, Duration::from_millis(20), || {
                (!self.dir.join("data/postmaster.pid").exists()).then_some(())
            });
        assert!(stopped.is_some(), "the server did not stop");
    }

    /// Starts the server again on the same dir and port, after [`Cluster::stop`].
    pub fn start_again(&self) {
        Command::new("/bin/sh")
            .args([
                "-c",
                r#"log=$1; shift; "$@" </dev/null >>"$log" 2>&1 &"#,
                "start",
                self.dir.join("server.log").to_str().unwrap(),
            ])
            .args(&self.argv)
            .status()
            .unwrap();
        self.wait_ready();
    }

    fn wait_ready(&self) {
        let mut last = String::new();
        let up =
            crate::support::within(
                crate::support::HANG,
                Duration::from_millis(50),
                || match self.admin_config("postgres").connect(postgres::NoTls) {
                    Ok(_) => Some(()),
                    Err(e) => {
                        last = e.to_string();
                        let exited = self.watchdog.lock().unwrap().0.try_wait().unwrap();
                        assert!(
                            exited.is_none(),
                            "PostgreSQL did not start ({e}):\n{}",
                            self.log()
                        );
                        None
                    }
                },
            );
        assert!(
            up.is_some(),
            "PostgreSQL did not start ({last}):\n{}",
            self.log()
        );
    }

    /// The server's log so far.
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    fn admin_config(&self, db: &str) -> postgres::Config {
        let mut c = postgres::Config::new();
        c.host_path(&self.dir)
            .port(self.port)
            .user("postgres")
            .dbname(db);
        c
    }

    /// A superuser connection over the unix socket.
    pub fn admin(&self, db: &str) -> postgres::Client {
        self.admin_config(db).connect(postgres::NoTls).unwrap()
    }

    /// A new empty database owned by `hookq`: its name.
    pub fn database(&self) -> String {
        let name = {
            let mut n = self.databases.lock().unwrap();
            *n += 1;
            format!("t{n}")
        };
        self.admin("postgres")
            .batch_execute(&format!("CREATE DATABASE {name} OWNER hookq"))
            .unwrap();
        name
    }

    /// A URL for `db` as `hookq` over loopback TCP, with `params` (`sslmode=disable` unless
    /// they say otherwise).
    pub fn url(&self, db: &str, params: &str) -> String {
        let params = if params.contains("sslmode") {
            params.to_owned()
        } else if params.is_empty() {
            "sslmode=disable".to_owned()
        } else {
            format!("sslmode=disable&{params}")
        };
        format!(
            "postgres://hookq:{PASSWORD}@127.0.0.1:{}/{db}?{params}",
            self.port
        )
    }
}
