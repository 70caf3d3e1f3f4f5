//! A fault-injecting TCP proxy (the Toxiproxy vocabulary, see [`Toxic`]),
//! placed by a round between the shippers (`dhp work --ship-to`) and the
//! `dhp transport` server. One toxic at a time is active on every
//! connection; the injector switches it at run time.
//!
//! Std threads, like the rest of the harness: an accept thread and two
//! pump threads per connection (client → server and back). Pumps poll
//! their socket every `POLL` (10 ms) so a toxic switched on takes effect on open
//! connections within that time.
//!
//! With a record file the proxy also writes down what it saw the server
//! acknowledge (`{"event": "ack", "hid", "seq", "t"}` per checkpoint ack,
//! `hello-ack` with the server's `ack_seq`), timestamped when it forwards
//! the reply — before the shipper can have read it. The checker compares
//! these acks with the peer's log (nothing acked may be missing) and with
//! the workers' progress (the asynchronous lag bound).

mod observe;
mod pump;
mod toxic;

pub use observe::{load_acks, Ack};
pub use toxic::Toxic;

use anyhow::{Context, Result};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often a pump re-reads the active toxic (and the accept loop its stop flag).
const POLL: Duration = Duration::from_millis(10);
/// A connect to the upstream server taking longer than this fails the client's connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// A write blocked this long (the reader stopped reading) ends the connection.
const WRITE_TIMEOUT: Duration = Duration::from_secs(2);

/// The active toxic and when it was set (per-connection limits count from then).
#[derive(Debug, Clone, Copy)]
struct Active {
    toxic: Toxic,
    since: Instant,
    generation: u64,
}

struct Inner {
    upstream: SocketAddr,
    active: Mutex<Option<Active>>,
    generation: AtomicU64,
    conns: Mutex<Vec<Weak<Conn>>>,
    stop: AtomicBool,
    accepted: AtomicU64,
    record: Option<observe::Recorder>,
    seed: u64,
}

impl Inner {
    fn active(&self) -> Option<Active> {
        *self.active.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One proxied connection: the client's socket and ours to the server.
struct Conn {
    id: u64,
    client: TcpStream,
    server: TcpStream,
    opened: Instant,
    /// Set when the connection is being torn down (cut, reset, error, stop).
    dead: AtomicBool,
    /// Bytes forwarded (both directions) under the toxic generation in `cut_gen`.
    cut_count: AtomicU64,
    cut_gen: AtomicU64,
    /// The handoff this connection ships (from its hello), for ack records.
    hid: Mutex<Option<String>>,
}

impl Conn {
    /// Close both sockets in both directions (FIN); both pumps then exit.
    fn close(&self) {
        self.dead.store(true, Ordering::SeqCst);
        let _ = self.client.shutdown(std::net::Shutdown::Both);
        let _ = self.server.shutdown(std::net::Shutdown::Both);
    }

    /// Abortive close: RST to both peers once the last handle is dropped.
    fn reset(&self) {
        rst_on_close(&self.client);
        rst_on_close(&self.server);
        self.dead.store(true, Ordering::SeqCst);
    }
}

/// SO_LINGER 0: closing the socket sends RST instead of FIN.
fn rst_on_close(s: &TcpStream) {
    use nix::sys::socket::{setsockopt, sockopt};
    let _ = setsockopt(&s.as_fd(), sockopt::Linger, &nix::libc::linger { l_onoff: 1, l_linger: 0 });
}

/// A running proxy; stopped (every connection closed) when dropped.
pub struct Proxy {
    inner: Arc<Inner>,
    local: SocketAddr,
    accept: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy").field("local", &self.local).field("upstream", &self.inner.upstream).finish()
    }
}

impl Proxy {
    /// Listen on a free loopback port and forward to `upstream`. `seed`
    /// seeds the latency jitter; `record` is the ack record file (appended).
    pub fn start(upstream: SocketAddr, seed: u64, record: Option<&Path>) -> Result<Proxy> {
        Proxy::start_in(None, upstream, seed, record)
    }

    /// [`Proxy::start`] inside the network namespace `netns` (its file,
    /// `/run/netns/NAME`; `None`: the harness's own): the accept thread
    /// enters it before it makes the listener, and every connection thread
    /// is spawned from there, so the listener on `127.0.0.1` and every
    /// upstream socket belong to that namespace (threads inherit it, sockets
    /// keep the one they were made in). Under `--hosts` that puts the proxy
    /// where the host's shippers are, and its upstream traffic leaves with
    /// the host's address — a partition between the hosts cuts it too.
    pub fn start_in(netns: Option<&Path>, upstream: SocketAddr, seed: u64, record: Option<&Path>) -> Result<Proxy> {
        let record = record.map(observe::Recorder::open).transpose()?;
        let inner = Arc::new(Inner {
            upstream,
            active: Mutex::new(None),
            generation: AtomicU64::new(0),
            conns: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            accepted: AtomicU64::new(0),
            record,
            seed,
        });
        let acc = inner.clone();
        let netns = netns.map(Path::to_path_buf);
        let (tx, rx) = std::sync::mpsc::channel::<Result<SocketAddr>>();
        let accept = std::thread::Builder::new()
            .name("proxy-accept".into())
            .spawn(move || {
                let listener = match listen(netns.as_deref()) {
                    Ok(l) => l,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                let _ = tx.send(listener.local_addr().context("proxy: its listening address"));
                accept_loop(&acc, &listener);
            })
            .context("proxy: starting the accept thread")?;
        let local = match rx.recv() {
            Ok(Ok(a)) => a,
            Ok(Err(e)) => {
                inner.stop.store(true, Ordering::SeqCst);
                let _ = accept.join();
                return Err(e);
            }
            Err(_) => {
                let _ = accept.join();
                anyhow::bail!("proxy: the accept thread ended before it listened");
            }
        };
        Ok(Proxy { inner, local, accept: Some(accept) })
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.local
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.inner.accepted.load(Ordering::SeqCst)
    }

    /// Connections open through the proxy right now.
    pub fn open_connections(&self) -> usize {
        self.live().len()
    }

    /// The active toxic.
    pub fn toxic(&self) -> Option<Toxic> {
        self.inner.active().map(|a| a.toxic)
    }

    /// Switch the toxic (`None`: a clean link). `Reset` resets every open
    /// connection at once.
    pub fn set(&self, toxic: Option<Toxic>) {
        let generation = self.inner.generation.fetch_add(1, Ordering::SeqCst) + 1;
        *self.inner.active.lock().unwrap_or_else(|p| p.into_inner()) =
            toxic.map(|toxic| Active { toxic, since: Instant::now(), generation });
        if toxic == Some(Toxic::Reset) {
            for c in self.live() {
                c.reset();
            }
        }
    }

    fn live(&self) -> Vec<Arc<Conn>> {
        let mut conns = self.inner.conns.lock().unwrap_or_else(|p| p.into_inner());
        conns.retain(|w| w.strong_count() > 0);
        conns.iter().filter_map(Weak::upgrade).collect()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.inner.stop.store(true, Ordering::SeqCst);
        for c in self.live() {
            c.close();
        }
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// Enter `netns` (this thread only) and listen on a free loopback port there.
fn listen(netns: Option<&Path>) -> Result<TcpListener> {
    if let Some(ns) = netns {
        let f = std::fs::File::open(ns)
            .with_context(|| format!("proxy: opening the network namespace {}", ns.display()))?;
        nix::sched::setns(&f, nix::sched::CloneFlags::CLONE_NEWNET)
            .with_context(|| format!("proxy: entering the network namespace {} (setns needs root)", ns.display()))?;
    }
    let listener = TcpListener::bind("127.0.0.1:0").context("proxy: binding a loopback port")?;
    listener.set_nonblocking(true).context("proxy: non-blocking listener")?;
    Ok(listener)
}

fn accept_loop(inner: &Arc<Inner>, listener: &TcpListener) {
    while !inner.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((client, _)) => {
                let id = inner.accepted.fetch_add(1, Ordering::SeqCst) + 1;
                if inner.active().is_some_and(|a| a.toxic == Toxic::Reset) {
                    rst_on_close(&client);
                    drop(client);
                    continue;
                }
                // one thread per connection so a slow upstream connect blocks nobody else
                let inner = inner.clone();
                let _ = std::thread::Builder::new().name(format!("proxy-conn-{id}")).spawn(move || {
                    open(&inner, id, client);
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(POLL),
            // EMFILE and friends: back off rather than spin
            Err(_) => std::thread::sleep(POLL * 5),
        }
    }
}

/// Connect upstream and start both pumps (the client is closed if the server cannot be reached).
fn open(inner: &Arc<Inner>, id: u64, client: TcpStream) {
    let Ok(server) = TcpStream::connect_timeout(&inner.upstream, CONNECT_TIMEOUT) else { return };
    let setup = |s: &TcpStream| -> std::io::Result<()> {
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(POLL))?;
        s.set_write_timeout(Some(WRITE_TIMEOUT))
    };
    if setup(&client).is_err() || setup(&server).is_err() {
        return;
    }
    let conn = Arc::new(Conn {
        id,
        client,
        server,
        opened: Instant::now(),
        dead: AtomicBool::new(false),
        cut_count: AtomicU64::new(0),
        cut_gen: AtomicU64::new(0),
        hid: Mutex::new(None),
    });
    inner.conns.lock().unwrap_or_else(|p| p.into_inner()).push(Arc::downgrade(&conn));
    if inner.stop.load(Ordering::SeqCst) {
        conn.close();
        return;
    }
    let (i2, c2) = (inner.clone(), conn.clone());
    let up =
        std::thread::Builder::new().name(format!("proxy-up-{id}")).spawn(move || pump::run(&i2, &c2, pump::Dir::Up));
    if up.is_err() {
        conn.close();
        return;
    }
    pump::run(inner, &conn, pump::Dir::Down);
}

#[cfg(test)]
mod tests;
