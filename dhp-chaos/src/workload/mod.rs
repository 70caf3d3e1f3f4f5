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
//! connection (`Connection: close`), HTTP/1.1 on the project's one stack
//! (dhp-http) under its shared limits: a connection over the cap is
//! answered 503 and closed, a request head must arrive within 5 s.
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
use dhp_http::axum::extract::ConnectInfo;
use dhp_http::axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use dhp_http::axum::response::{IntoResponse, Response};
use dhp_http::axum::Router;
use dhp_http::{Background, Limits};
use rand::RngCore;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The file a round's service appends its record to.
pub const FILE: &str = "workload.jsonl";
/// The environment variable that gives a worker the service's URL.
pub const ENV: &str = "DHP_WORKLOAD_URL";
/// The environment variable that gives one worker its credential.
pub const CREDENTIAL_ENV: &str = dhp_workload::client::CREDENTIAL_ENV;

/// The whole request head must arrive within this long (a client
/// trickling bytes is dropped then): the shared limit.
#[cfg(test)]
const IO_TIMEOUT: std::time::Duration = dhp_http::HEADER_TIMEOUT;

/// The census of each handoff the round dispatched: hid → (lo, hi, chunk).
pub type Tasks = HashMap<String, (u64, u64, u64)>;

/// A running service; stops (and joins) on drop.
pub struct Service {
    url: String,
    stops: ChunkStops,
    shared: Arc<Shared>,
    server: Option<Background>,
}

impl Service {
    /// Serve `tasks` on `listener` (bound by the caller: loopback, or
    /// loopback inside a host's namespace), recording to `dir/workload.jsonl`.
    pub fn start(listener: TcpListener, tasks: Tasks, dir: &Path) -> Result<Service> {
        let path = dir.join(FILE);
        let file = File::options().create(true).append(true).open(&path).map_err(Error::io("creating", &path))?;
        let addr = listener.local_addr().map_err(Error::io("reading the address of", &path))?;
        let stops = ChunkStops::default();
        let shared = Arc::new(Shared {
            tasks: Mutex::new(tasks),
            file: Mutex::new(file),
            last: Mutex::new(HashMap::new()),
            stops: stops.clone(),
            creds: Mutex::default(),
        });
        let server = dhp_http::spawn(vec![listener], router(shared.clone()), Limits::new("workload"), "workload")
            .map_err(Error::io("starting the service for", &path))?;
        Ok(Service { url: format!("http://{addr}"), stops, server: Some(server), shared })
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
        if let Some(s) = self.server.take() {
            s.stop();
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

/// Every request: a `GET` is [`answer`]ed on a blocking thread (it
/// appends to the record, may SIGSTOP a worker, sieves the chunk), from
/// the bearer credential and the peer's address; anything else is 400.
fn router(shared: Arc<Shared>) -> Router {
    let any = move |ConnectInfo(peer): ConnectInfo<SocketAddr>, method: Method, uri: Uri, headers: HeaderMap| {
        let shared = shared.clone();
        async move {
            let cred = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().strip_prefix("Bearer "))
                .map(|c| c.trim().to_string());
            let target = uri.path_and_query().map_or_else(|| uri.path().to_string(), |p| p.as_str().to_string());
            let (status, body) = if method == Method::GET {
                let asked = move || answer(&target, &peer.to_string(), cred.as_deref(), &shared);
                let done = tokio::task::spawn_blocking(asked).await;
                done.unwrap_or_else(|_| (500, json!({"error": "the service failed answering"})))
            } else {
                (400, json!({"error": "want GET /chunk?hid=…&n=…&end=…&holder=…&fence=…"}))
            };
            reply(status, &body)
        }
    };
    dhp_http::close_after_each(Router::new().fallback(any))
}

/// A JSON answer.
fn reply(status: u16, body: &Value) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
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
