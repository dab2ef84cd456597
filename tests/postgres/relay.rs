//! A TCP relay between a client and the server that can go silent, standing for a network
//! that drops without a FIN or an RST: used by the takeover tests and the bench's P8.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A TCP relay from a local port to the server's, forwarding until [`Relay::cut`]: then it
/// forwards nothing more either way, and keeps both sockets open, so neither end gets a FIN or
/// an RST, as when a network drops silently. Connections made after the cut are held the
/// same way.
pub struct Relay {
    /// The local port it listens on.
    pub port: u16,
    cut: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
}

impl Relay {
    /// A relay to the server's `server_port` on loopback.
    pub fn to(server_port: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (cut, done) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let (c, d) = (Arc::clone(&cut), Arc::clone(&done));
        listener.set_nonblocking(true).unwrap();
        std::thread::spawn(move || {
            while !d.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        client.set_nonblocking(false).unwrap();
                        let server = TcpStream::connect(("127.0.0.1", server_port)).unwrap();
                        for (from, to) in [
                            (client.try_clone().unwrap(), server.try_clone().unwrap()),
                            (server, client),
                        ] {
                            let (c, d) = (Arc::clone(&c), Arc::clone(&d));
                            std::thread::spawn(move || pipe(from, to, &c, &d));
                        }
                    }
                    // Nothing to accept: the relay's own pace of looking again (and at `done`).
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Self { port, cut, done }
    }

    /// Stops forwarding, either way, for every connection, now and later.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::Relaxed);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
    }
}

/// Copies `from` to `to` until `done`; while `cut`, reads nothing and writes nothing.
fn pipe(mut from: TcpStream, mut to: TcpStream, cut: &AtomicBool, done: &AtomicBool) {
    from.set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let mut buf = [0u8; 16 * 1024];
    while !done.load(Ordering::Relaxed) {
        if cut.load(Ordering::Relaxed) {
            // Cut: the relay idles at its own pace until it is done.
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if cut.load(Ordering::Relaxed) {
                    // Cut between the read and the write: the bytes are lost, as on a wire.
                    continue;
                }
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
    }
    let _ = to.shutdown(Shutdown::Both);
}
