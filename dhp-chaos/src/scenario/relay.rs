//! The net-chaos relay: a line relay between the shippers and the
//! transport server that can hold one ship in flight, so the harness
//! SIGKILLs a worker at an exact moment of a ship.
//!
//! The wire is newline-delimited JSON both ways (docs/PROTOCOL.md §9), so
//! the relay forwards whole lines, unchanged. One moment is armed at a
//! time, for one handoff and seq:
//!
//! - [`Moment::FrameInFlight`]: the checkpoint frame of that seq is held
//!   (the server never gets it) — the worker has committed the
//!   checkpoint and is waiting for the ack;
//! - [`Moment::AckInFlight`]: the frame reaches the server, the server's
//!   ack is held — the peer has the line, the worker does not know it;
//! - [`Moment::BetweenShips`]: nothing is held; the harness is told once
//!   the ack was forwarded, i.e. the ship is over.
//!
//! A held connection stays held until [`Relay::release`] (after the kill):
//! then the held line is dropped and both sockets are closed, as a dead
//! worker's connection would be. Delaying bytes is all the relay ever does
//! to them. It also writes what it forwarded to `proxy.jsonl` in the link
//! proxy's record format (`sent`, `ack`, `hello-ack`; a held line is not
//! forwarded, so it is not recorded: the harness records the hold in the
//! history), so the checker's `peer-acks` invariant reads it as it reads
//! the proxy's.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// Where in a ship the worker is killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Moment {
    /// After the ship of seq k was acknowledged, before the next checkpoint.
    BetweenShips,
    /// Checkpoint k committed, its frame on the way to the peer (held).
    FrameInFlight,
    /// The peer wrote seq k, its ack on the way back (held).
    AckInFlight,
}

impl Moment {
    /// The kebab-case name reports and the history use.
    pub fn name(self) -> &'static str {
        match self {
            Moment::BetweenShips => "between-ships",
            Moment::FrameInFlight => "frame-in-flight",
            Moment::AckInFlight => "ack-in-flight",
        }
    }
}

/// The armed moment: which handoff's ship, which seq.
#[derive(Debug, Clone)]
struct Plan {
    hid: String,
    seq: i64,
    moment: Moment,
}

/// The armed moment was reached.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// When, epoch seconds.
    pub t: f64,
    /// The relay's id of the connection.
    pub conn: u64,
}

#[derive(Default)]
struct State {
    plan: Option<Plan>,
    hit: Option<Hit>,
    /// The held connection may be closed now.
    released: bool,
}

struct Shared {
    upstream: SocketAddr,
    state: Mutex<State>,
    cv: Condvar,
    stop: AtomicBool,
    next_conn: AtomicU64,
    record: Mutex<File>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self, v: Value) {
        let mut line = v.to_string();
        line.push('\n');
        let mut f = self.record.lock().unwrap_or_else(|p| p.into_inner());
        // a lost record only weakens peer-acks (fewer acks to verify), never fakes a pass
        let _ = f.write_all(line.as_bytes());
    }

    /// Is this line the armed moment? Then record the hit (once).
    fn matches(&self, hid: &str, seq: i64, moment: Moment, conn: u64) -> bool {
        let mut st = self.lock();
        let hit =
            st.hit.is_none() && st.plan.as_ref().is_some_and(|p| p.hid == hid && p.seq == seq && p.moment == moment);
        if hit {
            st.hit = Some(Hit { t: crate::hist::now(), conn });
            self.cv.notify_all();
        }
        hit
    }

    /// Hold the connection until the harness releases it (or the relay stops).
    fn hold(&self) {
        let mut st = self.lock();
        while !st.released && !self.stop.load(Ordering::SeqCst) {
            st = self.cv.wait_timeout(st, Duration::from_millis(50)).unwrap_or_else(|p| p.into_inner()).0;
        }
    }
}

/// A running relay; stopped when dropped (open connections end as their
/// peers close them).
pub struct Relay {
    shared: Arc<Shared>,
    local: SocketAddr,
}

impl Relay {
    /// Listen on a free loopback port, forward to `upstream`, append the
    /// forwarding record to `record`.
    pub fn start(upstream: SocketAddr, record: &Path) -> Result<Relay> {
        let l = TcpListener::bind("127.0.0.1:0").context("binding the net-chaos relay")?;
        let local = l.local_addr()?;
        l.set_nonblocking(true)?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(record)
            .with_context(|| format!("opening {}", record.display()))?;
        let shared = Arc::new(Shared {
            upstream,
            state: Mutex::new(State::default()),
            cv: Condvar::new(),
            stop: AtomicBool::new(false),
            next_conn: AtomicU64::new(1),
            record: Mutex::new(file),
        });
        let s = shared.clone();
        std::thread::spawn(move || accept_loop(&l, &s));
        Ok(Relay { shared, local })
    }

    /// Where shippers connect.
    pub fn addr(&self) -> SocketAddr {
        self.local
    }

    /// Arm `moment` at `hid`'s seq `seq` (replacing any earlier plan).
    pub fn arm(&self, hid: &str, seq: i64, moment: Moment) {
        let mut st = self.shared.lock();
        *st = State { plan: Some(Plan { hid: hid.to_string(), seq, moment }), hit: None, released: false };
    }

    /// The armed moment, once reached (waits up to `timeout`).
    pub fn wait_hit(&self, timeout: Duration) -> Option<Hit> {
        let st = self.shared.lock();
        let (st, _) =
            self.shared.cv.wait_timeout_while(st, timeout, |s| s.hit.is_none()).unwrap_or_else(|p| p.into_inner());
        st.hit
    }

    /// Disarm: a held line is dropped and its connection closed.
    pub fn release(&self) {
        let mut st = self.shared.lock();
        st.released = true;
        st.plan = None;
        self.shared.cv.notify_all();
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.cv.notify_all();
    }
}

fn accept_loop(l: &TcpListener, s: &Arc<Shared>) {
    while !s.stop.load(Ordering::SeqCst) {
        match l.accept() {
            Ok((client, _)) => {
                let s = s.clone();
                std::thread::spawn(move || {
                    let _ = serve(client, &s);
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(2)),
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// One connection: client → server lines on a thread of their own, server
/// → client lines here.
fn serve(client: TcpStream, s: &Arc<Shared>) -> Result<()> {
    client.set_nonblocking(false)?;
    let server = match TcpStream::connect_timeout(&s.upstream, Duration::from_secs(2)) {
        Ok(x) => x,
        Err(e) => {
            let _ = client.shutdown(Shutdown::Both);
            return Err(e.into());
        }
    };
    let conn = s.next_conn.fetch_add(1, Ordering::SeqCst);
    let hid: Arc<Mutex<Option<String>>> = Arc::default();
    let (c2, s2, hid2, sh2) = (client.try_clone()?, server.try_clone()?, hid.clone(), s.clone());
    std::thread::spawn(move || {
        pump(&c2, &s2, &sh2, conn, &hid2, true);
        close(&c2, &s2);
    });
    pump(&server, &client, s, conn, &hid, false);
    close(&client, &server);
    Ok(())
}

fn close(a: &TcpStream, b: &TcpStream) {
    let _ = a.shutdown(Shutdown::Both);
    let _ = b.shutdown(Shutdown::Both);
}

/// Forward lines from `from` to `to` (`up`: client → server) until either
/// side closes, or a held line is released.
fn pump(from: &TcpStream, mut to: &TcpStream, s: &Shared, conn: u64, hid: &Mutex<Option<String>>, up: bool) {
    let mut r = BufReader::new(from);
    let mut line = Vec::new();
    loop {
        line.clear();
        match r.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) if line.last() != Some(&b'\n') => return, // cut mid-line: never forwarded
            Ok(_) => {}
        }
        let v: Value = serde_json::from_slice(&line).unwrap_or(Value::Null);
        let t = crate::hist::now();
        let cur = hid.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if up {
            if v["type"] == "hello" {
                if let Some(h) = v["handoff_id"].as_str() {
                    *hid.lock().unwrap_or_else(|p| p.into_inner()) = Some(h.to_string());
                }
            }
            if let (Some(h), Some(seq), Some("checkpoint")) = (cur.as_deref(), v["seq"].as_i64(), v["type"].as_str()) {
                if s.matches(h, seq, Moment::FrameInFlight, conn) {
                    s.hold();
                    return;
                }
                s.write(json!({"t": t, "event": "sent", "conn": conn, "hid": h, "seq": seq}));
            }
        } else if let (Some(h), true) = (cur.as_deref(), v["ok"].as_bool() == Some(true)) {
            if let Some(seq) = v["seq"].as_i64() {
                if s.matches(h, seq, Moment::AckInFlight, conn) {
                    s.hold();
                    return;
                }
                // recorded before the shipper can have read it (as the link proxy does)
                s.write(json!({"t": t, "event": "ack", "conn": conn, "hid": h, "seq": seq}));
                if to.write_all(&line).is_err() {
                    return;
                }
                s.matches(h, seq, Moment::BetweenShips, conn);
                continue;
            } else if let Some(seq) = v["ack_seq"].as_i64() {
                s.write(json!({"t": t, "event": "hello-ack", "conn": conn, "hid": h, "seq": seq}));
            }
        }
        if to.write_all(&line).is_err() {
            return;
        }
    }
}
