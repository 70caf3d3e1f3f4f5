//! The harness-owned workload service (CONTRACT.md §2.1): workers get each
//! census chunk's count and sum from the harness instead of computing it,
//! the way the demo's offline mirror serves pages. The service records who
//! asked for which chunk of which handoff under which fence, and when, and
//! stamps every answer with a fresh random token the worker must carry in
//! the checkpoint that commits the chunk. The checker then knows from its
//! own records which request each committed checkpoint came from
//! (attribution, rework, writes computed under a superseded fence) without
//! asking the implementation under test.
//!
//! `GET /chunk?hid=H&n=N&end=E&holder=W&fence=F` with
//! `Authorization: Bearer CRED` → `200 {"count": C, "sum": S, "stamp":
//! "…"}`; anything else → `400`/`403`/`404` `{"error": …}`. One request per
//! connection (`Connection: close`), plain HTTP/1.1.
//!
//! Who asks is the harness's knowledge, not the asker's word: every worker
//! is spawned with its own unguessable credential ([`CREDENTIAL_ENV`], in
//! that process's environment only; [`Service::credential_for`]), which the
//! service maps to the name the harness gave the process. A request
//! without a credential, with an unknown one, or naming another holder
//! than its credential's, is refused (403) and recorded as refused.

mod record;
mod stop;

pub use record::{load, Served, Workload};
pub use stop::{ChunkStop, ChunkStops, STOP_AT_CHUNK};

use crate::check::census::primes_in;
use crate::error::{Error, Result};
use rand::RngCore;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The file a round's service appends its record to.
pub const FILE: &str = "workload.jsonl";
/// The environment variable that gives a worker the service's URL.
pub const ENV: &str = "DHP_WORKLOAD_URL";
/// The environment variable that gives one worker its credential.
pub const CREDENTIAL_ENV: &str = dhp_workload::client::CREDENTIAL_ENV;

/// Longest request line or header the service reads.
const MAX_LINE: usize = 4096;
/// The whole request head must arrive within this long (a client
/// trickling bytes is dropped then), and the answer be taken within it.
const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections served at once (a quarter of the soft RLIMIT_NOFILE when
/// that is lower); one more is answered 503 and closed (a worker asks one
/// chunk at a time: a round has far fewer).
const MAX_CONNECTIONS: usize = 64;

/// The census of each handoff the round dispatched: hid → (lo, hi, chunk).
pub type Tasks = HashMap<String, (u64, u64, u64)>;

/// A running service; stops (and joins) on drop.
pub struct Service {
    url: String,
    stops: ChunkStops,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Service {
    /// Serve `tasks` on `listener` (bound by the caller: loopback, or
    /// loopback inside a host's namespace), recording to `dir/workload.jsonl`.
    pub fn start(listener: TcpListener, tasks: Tasks, dir: &Path) -> Result<Service> {
        let path = dir.join(FILE);
        let file = File::options().create(true).append(true).open(&path).map_err(Error::io("creating", &path))?;
        let addr = listener.local_addr().map_err(Error::io("reading the address of", &path))?;
        listener.set_nonblocking(true).map_err(Error::io("configuring the listener of", &path))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stops = ChunkStops::default();
        let shared = Arc::new(Shared {
            tasks: Mutex::new(tasks),
            file: Mutex::new(file),
            last: Mutex::new(HashMap::new()),
            stops: stops.clone(),
            creds: Mutex::default(),
        });
        let flag = stop.clone();
        let served = shared.clone();
        let thread = std::thread::Builder::new()
            .name("workload".into())
            .spawn(move || run(listener, &flag, &served))
            .map_err(Error::io("starting the service for", &path))?;
        Ok(Service { url: format!("http://{addr}"), stops, stop, thread: Some(thread), shared })
    }

    /// Serve one more handoff (a round extended by `--steer`).
    pub fn add_task(&self, hid: String, task: (u64, u64, u64)) {
        if let Ok(mut t) = self.shared.tasks.lock() {
            t.insert(hid, task);
        }
    }

    /// When `holder` was last served a chunk (epoch seconds), if ever.
    pub fn last_served(&self, holder: &str) -> Option<f64> {
        self.shared.last.lock().ok()?.get(holder).copied()
    }

    /// A fresh credential for the process the harness names `holder`
    /// (give it in that process's environment only, as [`CREDENTIAL_ENV`]).
    pub fn credential_for(&self, holder: &str) -> String {
        let mut raw = [0u8; 16];
        rand::thread_rng().fill_bytes(&mut raw);
        let cred: String = raw.iter().map(|b| format!("{b:02x}")).collect();
        self.shared.creds.lock().unwrap_or_else(|p| p.into_inner()).insert(cred.clone(), holder.to_string());
        cred
    }

    /// `http://ADDR`, the value of [`ENV`].
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The workers armed to be stopped at their next served chunk.
    pub fn stops(&self) -> &ChunkStops {
        &self.stops
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Shared {
    /// Behind a lock: a steered round adds handoffs while it runs.
    tasks: Mutex<Tasks>,
    /// holder → when it was last served (for `--steer`).
    last: Mutex<HashMap<String, f64>>,
    file: Mutex<File>,
    stops: ChunkStops,
    /// credential → the holder name the harness gave its process
    creds: Mutex<HashMap<String, String>>,
}

/// Accept until `stop`; each connection on its own thread, at most
/// [`MAX_CONNECTIONS`] at once.
fn run(listener: TcpListener, stop: &AtomicBool, shared: &Arc<Shared>) {
    let active = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let cap = crate::site::guard::conn_cap(MAX_CONNECTIONS);
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((mut conn, peer)) => {
                if active.fetch_add(1, Ordering::SeqCst) >= cap {
                    active.fetch_sub(1, Ordering::SeqCst);
                    let _ = conn.set_write_timeout(Some(Duration::from_secs(1)));
                    let _ = conn.write_all(
                        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    );
                    continue;
                }
                let (s, a) = (shared.clone(), active.clone());
                let spawned = std::thread::Builder::new().name("workload-conn".into()).spawn(move || {
                    let _ = serve(conn, &peer.to_string(), &s);
                    a.fetch_sub(1, Ordering::SeqCst);
                });
                if spawned.is_err() {
                    active.fetch_sub(1, Ordering::SeqCst);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(2)),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn serve(conn: TcpStream, peer: &str, shared: &Shared) -> std::io::Result<()> {
    conn.set_nonblocking(false)?;
    conn.set_read_timeout(Some(IO_TIMEOUT))?;
    conn.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut reader = BufReader::new(Deadline { s: conn.try_clone()?, until: std::time::Instant::now() + IO_TIMEOUT });
    let mut line = String::new();
    let (status, body) = match read_line(&mut reader, &mut line) {
        Ok(()) => {
            let target = request_target(&line);
            // the headers, up to the blank line: only the credential is read
            let mut h = String::new();
            let mut cred = None;
            loop {
                h.clear();
                if read_line(&mut reader, &mut h).is_err() || h.trim_end().is_empty() {
                    break;
                }
                if let Some((k, v)) = h.split_once(':') {
                    if k.trim().eq_ignore_ascii_case("authorization") {
                        cred = v.trim().strip_prefix("Bearer ").map(|c| c.trim().to_string());
                    }
                }
            }
            match target {
                Some(t) => answer(t, peer, cred.as_deref(), shared),
                None => (400, json!({"error": "want GET /chunk?hid=…&n=…&end=…&holder=…&fence=…"})),
            }
        }
        Err(why) => (400, json!({"error": why})),
    };
    let text = body.to_string();
    let reason = match status {
        200 => "OK",
        403 => "Forbidden",
        404 => "Not Found",
        _ => "Bad Request",
    };
    let mut w = conn;
    write!(
        w,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    )?;
    w.flush()
}

/// A socket whose reads all end by one deadline: each read waits at most
/// the time left, so a trickling client cannot stretch the request head.
struct Deadline {
    s: TcpStream,
    until: std::time::Instant,
}

impl Read for Deadline {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        self.s.set_read_timeout(Some(left))?;
        self.s.read(buf)
    }
}

/// One CRLF- or LF-terminated line of at most [`MAX_LINE`] bytes.
fn read_line(r: &mut impl BufRead, out: &mut String) -> std::result::Result<(), String> {
    let mut buf = Vec::new();
    let n = r.by_ref().take(MAX_LINE as u64 + 1).read_until(b'\n', &mut buf).map_err(|e| format!("reading: {e}"))?;
    if n == 0 {
        return Err("empty request".into());
    }
    if n > MAX_LINE {
        return Err(format!("request line longer than {MAX_LINE} bytes"));
    }
    *out = String::from_utf8(buf).map_err(|_| "request is not UTF-8".to_string())?;
    Ok(())
}

/// The target of `GET TARGET HTTP/1.x`.
fn request_target(line: &str) -> Option<&str> {
    let mut parts = line.split_whitespace();
    match (parts.next(), parts.next(), parts.next()) {
        (Some("GET"), Some(t), Some(v)) if v.starts_with("HTTP/1.") => Some(t),
        _ => None,
    }
}

/// Check a chunk request against the round's tasks, serve and record it.
fn answer(target: &str, peer: &str, cred: Option<&str>, shared: &Shared) -> (u16, Value) {
    let Some(query) = target.strip_prefix("/chunk?") else {
        return (404, json!({"error": format!("no such resource {target:?}: GET /chunk?…")}));
    };
    let q: HashMap<String, String> =
        query.split('&').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (unescape(k), unescape(v))).collect();
    let parsed = match shared.tasks.lock() {
        Ok(tasks) => Request::parse(&q, &tasks),
        Err(_) => Err("the service's task table is unusable (a thread panicked)".to_string()),
    };
    let req = match parsed {
        Ok(r) => r,
        Err(why) => {
            shared.append(&json!({"t": crate::hist::now(), "bad": why, "target": target, "peer": peer}));
            return (400, json!({"error": why}));
        }
    };
    // who really asks: the credential's holder, never the query's word
    let by = cred.and_then(|c| shared.creds.lock().unwrap_or_else(|p| p.into_inner()).get(c).cloned());
    let refused = match (cred, &by) {
        (None, _) => Some("no credential (Authorization: Bearer $DHP_WORKLOAD_CREDENTIAL)".to_string()),
        (Some(_), None) => Some("unknown credential".to_string()),
        (Some(_), Some(b)) if *b != req.holder => Some(format!("the credential of {b} asks as holder {}", req.holder)),
        _ => None,
    };
    if let Some(why) = refused {
        shared.append(&json!({"t": crate::hist::now(), "bad": why, "refused": "credential", "target": target,
                              "peer": peer, "asked_as": req.holder, "by": by}));
        return (403, json!({"error": why}));
    }
    let (count, sum) = primes_in(req.n, req.end);
    let mut raw = [0u8; 12];
    rand::thread_rng().fill_bytes(&mut raw);
    let stamp: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    // Recorded before it is answered: a stamp the worker can hold is in the record.
    shared.append(&json!({"t": crate::hist::now(), "stamp": stamp, "hid": req.hid, "n": req.n, "end": req.end,
                          "holder": req.holder, "by": by, "fence": req.fence, "peer": peer}));
    // an armed worker is stopped now, before it reads the answer (stop.rs)
    shared.stops.at_answer(&req.holder, &req.hid, req.fence, req.n, req.end);
    if let Ok(mut last) = shared.last.lock() {
        last.insert(req.holder.clone(), crate::hist::now());
    }
    (200, json!({"count": count, "sum": sum, "stamp": stamp}))
}

struct Request {
    hid: String,
    n: u64,
    end: u64,
    holder: String,
    fence: i64,
}

impl Request {
    fn parse(q: &HashMap<String, String>, tasks: &Tasks) -> std::result::Result<Request, String> {
        let get = |k: &str| q.get(k).map(String::as_str).ok_or_else(|| format!("missing parameter {k}"));
        let num = |k: &str| get(k)?.parse::<u64>().map_err(|_| format!("{k} must be a non-negative integer"));
        let hid = get("hid")?.to_string();
        let &(lo, hi, chunk) = tasks.get(&hid).ok_or_else(|| format!("hid {hid:?} is no handoff of this round"))?;
        let (n, end) = (num("n")?, num("end")?);
        let want_end = n.saturating_add(chunk).min(hi);
        if n < lo || n >= hi || (n - lo) % chunk != 0 || end != want_end {
            return Err(format!(
                "[{n}, {end}) is no chunk of this handoff (lo {lo}, hi {hi}, chunk {chunk}: the chunk at {n} ends at {want_end})"
            ));
        }
        let holder = get("holder")?.to_string();
        if holder.is_empty() || holder.len() > 128 || !holder.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("holder must be 1..=128 printable ASCII characters".into());
        }
        let fence = get("fence")?.parse::<i64>().map_err(|_| "fence must be an integer".to_string())?;
        Ok(Request { hid, n, end, holder, fence })
    }
}

/// A query component with `%XX` escapes (and `+`) decoded; a malformed
/// escape is kept as written.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match b[i] {
            b'%' if i + 2 < b.len() => match (hex(b[i + 1]), hex(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Shared {
    /// One line, one `write(2)`.
    fn append(&self, line: &Value) {
        let mut text = line.to_string();
        text.push('\n');
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let _ = f.write_all(text.as_bytes());
    }
}

#[cfg(test)]
mod tests;
