//! `--dashboard ADDR`: the run's page served live while the rounds run,
//! on a loopback address only. `/` is the page of [`super::render`] with
//! a live section on top (the round in progress, its faults and kills so
//! far), kept current by server-sent events from `/events` (`live` every
//! quarter second while something changed, `rounds` when a round ended and
//! the page below has new rows, `done` with the exit code at the end; each
//! stream lasts 1 s and the browser's EventSource reconnects); no page
//! reload, no script but the page's own. `/state.json` is the live
//! state, and every other path a file of the run directory, read-only.
//!
//! Served by the project's one HTTP stack (dhp-http) under its shared
//! limits (connection cap, head size and deadline, ...). Every request
//! passes [`super::guard`] first: a loopback (or `--allow-host`) Host and
//! Origin, and the token (Bearer, or the cookie `/login?token=T` sets).
//!
//! The caller binds the listener (so a test can bind port 0) and runs
//! [`Dashboard::run`] on a thread of its own until `shutdown` is set.

use super::esc;
use super::guard::{Guard, Head, Verdict};
use crate::error::{Error, Result};
use crate::round::Live;
use dhp_http::axum::body::{Body, Bytes};
use dhp_http::axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use dhp_http::axum::response::Response;
use dhp_http::axum::Router;
use serde::Serialize;
use serde_json::Value;
use std::io::{Read, Seek, SeekFrom};
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Faults listed in the live section (the latest).
const LIVE_FAULTS: usize = 40;
/// How often an event stream looks for news.
const TICK: Duration = Duration::from_millis(250);
/// How long one event stream lasts: then it ends, and the client's
/// EventSource connects again after the `retry` the stream gave (and gets
/// the whole state first: every `live` event is complete). A stream that
/// never ends would also hold a headless browser's virtual time still.
const STREAM: Duration = Duration::from_secs(1);

/// Parse `--dashboard`'s value: `HOST:PORT` on a loopback address
/// (`127.0.0.1:8080`, `[::1]:0`, `localhost:8080`); any other address is
/// refused, since the dashboard serves the run's files to whoever connects.
pub fn parse_addr(s: &str) -> std::result::Result<SocketAddr, String> {
    let addrs: Vec<SocketAddr> = match s.parse::<SocketAddr>() {
        Ok(a) => vec![a],
        Err(_) => s
            .to_socket_addrs()
            .map_err(|e| format!("{s:?} is not HOST:PORT ({e}); give a loopback address such as 127.0.0.1:8080"))?
            .collect(),
    };
    let Some(a) = addrs.first().copied() else {
        return Err(format!("{s:?} names no address; give a loopback address such as 127.0.0.1:8080"));
    };
    if !addrs.iter().all(|a| a.ip().is_loopback()) {
        return Err(format!(
            "{s:?} is not a loopback address: the dashboard serves the run's files without authentication, so it listens on loopback only (127.0.0.1, ::1 or localhost)"
        ));
    }
    Ok(a)
}

/// The live state of a run, as the event stream sends it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LiveState {
    /// The round in progress (none between rounds and at the end).
    pub round: Option<u32>,
    /// Its seed.
    pub seed: u64,
    /// Handoffs it dispatched (per host with `--hosts`).
    pub handoffs: u32,
    /// Seconds since it started.
    pub elapsed_s: f64,
    /// Its counters so far ([`Live`]).
    pub kills: u64,
    /// Faults injected so far.
    pub faults: u64,
    /// Workers stopped so far.
    pub pauses: u64,
    /// Workers a failpoint killed so far.
    pub failpoint_kills: u64,
    /// Handoffs ended (completed or failed) as the monitor last saw the store.
    pub terminal: usize,
    /// Worker processes started so far.
    pub spawned_workers: u64,
    /// Supervisor processes started so far.
    pub spawned_supervisors: u64,
    /// The latest faults of the round from its history: `[seconds, kind, signal, victim]`.
    pub recent_faults: Vec<(f64, String, String, String)>,
    /// Rounds finished in this run.
    pub rounds_done: u32,
    /// The run's exit code, once it has ended.
    pub exit_code: Option<i32>,
}

/// New lines of a growing file, from where the last read stopped.
#[derive(Debug, Default)]
struct Tail {
    path: PathBuf,
    offset: u64,
    partial: String,
}

impl Tail {
    fn new_lines(&mut self) -> Vec<String> {
        let Ok(mut f) = std::fs::File::open(&self.path) else { return Vec::new() };
        if f.seek(SeekFrom::Start(self.offset)).is_err() {
            return Vec::new();
        }
        let mut buf = Vec::new();
        let Ok(n) = f.take(4 << 20).read_to_end(&mut buf) else { return Vec::new() };
        self.offset += n as u64;
        self.partial.push_str(&String::from_utf8_lossy(&buf));
        let mut out: Vec<String> = self.partial.split('\n').map(String::from).collect();
        // the last piece has no newline yet: keep it for the next read
        self.partial = out.pop().unwrap_or_default();
        out
    }
}

#[derive(Debug, Default)]
struct Inner {
    state: LiveState,
    /// Bumped on every change the page should see.
    version: u64,
    /// Bumped when a round ended (the page below the live section changed).
    rounds_version: u64,
    started: Option<Instant>,
    t0: f64,
    round_dir: Option<PathBuf>,
    tails: Vec<Tail>,
    faults: Vec<(f64, String, String, String)>,
}

/// The live view of one run.
#[derive(Debug)]
pub struct Dashboard {
    guard: Guard,
    run_dir: Mutex<PathBuf>,
    inner: Mutex<Inner>,
}

impl Dashboard {
    /// A dashboard of the run directory `run_dir`, answering what `guard` lets through.
    pub fn new(run_dir: &Path, guard: Guard) -> Arc<Dashboard> {
        Arc::new(Dashboard { guard, run_dir: Mutex::new(run_dir.to_path_buf()), inner: Mutex::new(Inner::default()) })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn dir(&self) -> PathBuf {
        self.run_dir.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// The run directory whose page is served (each `--store` engine has its own).
    pub fn set_run_dir(&self, dir: &Path) {
        *self.run_dir.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = dir.to_path_buf();
    }

    /// Round `round` (seed `seed`, `handoffs` handoffs) starts in `dir`.
    pub fn round_started(&self, round: u32, seed: u64, handoffs: u32, dir: &Path) {
        let mut g = self.lock();
        let done = g.state.rounds_done;
        g.state = LiveState { round: Some(round), seed, handoffs, rounds_done: done, ..LiveState::default() };
        g.started = Some(Instant::now());
        g.t0 = crate::hist::now();
        g.round_dir = Some(dir.to_path_buf());
        g.tails.clear();
        g.faults.clear();
        g.version += 1;
    }

    /// The round's counters now.
    pub fn progress(&self, l: &Live) {
        let mut g = self.lock();
        let s = &mut g.state;
        let changed =
            (s.kills, s.faults, s.pauses, s.failpoint_kills, s.terminal, s.spawned_workers, s.spawned_supervisors)
                != (
                    l.kills,
                    l.faults,
                    l.pauses,
                    l.failpoint_kills,
                    l.terminal,
                    l.spawned_workers,
                    l.spawned_supervisors,
                );
        s.kills = l.kills;
        s.faults = l.faults;
        s.pauses = l.pauses;
        s.failpoint_kills = l.failpoint_kills;
        s.terminal = l.terminal;
        s.spawned_workers = l.spawned_workers;
        s.spawned_supervisors = l.spawned_supervisors;
        if changed {
            g.version += 1;
        }
    }

    /// The round ended and its report is on disk.
    pub fn round_ended(&self) {
        let mut g = self.lock();
        g.state.rounds_done += 1;
        g.state.round = None;
        g.version += 1;
        g.rounds_version += 1;
    }

    /// The run ended with exit code `code`.
    pub fn finished(&self, code: i32) {
        let mut g = self.lock();
        g.state.exit_code = Some(code);
        g.state.round = None;
        g.version += 1;
        g.rounds_version += 1;
    }

    /// The live state now, with the round's latest faults read from its history.
    pub fn snapshot(&self) -> (LiveState, u64, u64) {
        let mut g = self.lock();
        self.refresh_faults(&mut g);
        let mut s = g.state.clone();
        if s.round.is_some() {
            s.elapsed_s = g.started.map_or(0.0, |t| t.elapsed().as_secs_f64());
        }
        s.recent_faults = g.faults.iter().rev().take(LIVE_FAULTS).cloned().collect();
        (s, g.version, g.rounds_version)
    }

    fn refresh_faults(&self, g: &mut Inner) {
        let Some(dir) = g.round_dir.clone() else { return };
        if g.state.round.is_none() {
            return;
        }
        // the harness's own records (never what the judged write); a --hosts
        // round: every host's (they appear once the hosts start)
        let own = crate::hist::harness_path(&dir.join("history.jsonl"));
        let mut files = vec![own.clone()];
        if let Ok(d) = std::fs::read_dir(&dir) {
            let name = own.file_name().unwrap_or_default().to_owned();
            let mut hosts: Vec<PathBuf> =
                d.filter_map(|e| e.ok().map(|e| e.path().join(&name))).filter(|p| p.exists()).collect();
            hosts.sort();
            files.extend(hosts);
        }
        for f in files {
            if f.exists() && !g.tails.iter().any(|t| t.path == f) {
                g.tails.push(Tail { path: f, ..Tail::default() });
            }
        }
        let t0 = g.t0;
        let mut new = Vec::new();
        for t in &mut g.tails {
            for line in t.new_lines() {
                let Ok(v) = serde_json::from_str::<Value>(&line) else { continue };
                if v["process"] != "chaos" || v["op"] != "fault" {
                    continue;
                }
                let kind = v["kind"].as_str().unwrap_or("");
                if kind == "teardown" {
                    continue;
                }
                let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
                new.push((v["t"].as_f64().unwrap_or(t0) - t0, kind.to_string(), s("signal"), s("victim")));
            }
        }
        if !new.is_empty() {
            g.faults.extend(new);
            g.faults.sort_by(|a, b| a.0.total_cmp(&b.0));
            g.version += 1;
        }
    }

    /// Serve until `shutdown` is set: the caller binds `listener` (any
    /// loopback port, 0 included) and runs this on a thread of its own.
    pub fn run(self: &Arc<Self>, listener: TcpListener, shutdown: Arc<AtomicBool>) -> Result<()> {
        let addr = listener.local_addr().map_err(Error::io("reading the dashboard's address", "--dashboard"))?;
        let setup = Error::io("setting up the dashboard listener", addr.to_string());
        listener.set_nonblocking(true).map_err(setup)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(Error::io("starting the dashboard's runtime", addr.to_string()))?;
        rt.block_on(async {
            let l = tokio::net::TcpListener::from_std(listener)
                .map_err(Error::io("setting up the dashboard listener", addr.to_string()))?;
            let stop = Arc::clone(&shutdown);
            let stopped = async move {
                while !stop.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            };
            // then the event streams send their last event and close
            let limits = dhp_http::Limits::new("chaos-dashboard");
            dhp_http::serve(l, self.router(shutdown), limits, stopped).await;
            Ok(())
        })
    }

    /// Every request, judged and answered on a blocking thread (pages are
    /// rendered from the run directory's files).
    fn router(self: &Arc<Self>, shutdown: Arc<AtomicBool>) -> Router {
        let me = Arc::clone(self);
        let any = move |method: Method, uri: Uri, headers: HeaderMap| {
            let (me, shutdown) = (Arc::clone(&me), Arc::clone(&shutdown));
            async move {
                let head = Head {
                    method: method.as_str().to_string(),
                    target: uri.path_and_query().map_or_else(|| uri.path().to_string(), |p| p.as_str().to_string()),
                    headers: headers
                        .iter()
                        .map(|(k, v)| {
                            (k.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).trim().to_string())
                        })
                        .collect(),
                };
                let answered = tokio::task::spawn_blocking(move || me.answer(&head, &shutdown)).await;
                answered
                    .unwrap_or_else(|_| respond(StatusCode::INTERNAL_SERVER_ERROR, "text/plain", b"failed\n".to_vec()))
            }
        };
        dhp_http::close_after_each(Router::new().fallback(any))
    }

    fn answer(self: &Arc<Self>, head: &Head, shutdown: &Arc<AtomicBool>) -> Response {
        match self.guard.judge(head) {
            Verdict::Allowed => {}
            Verdict::WrongHost => {
                return respond(
                    StatusCode::FORBIDDEN,
                    "text/plain",
                    b"this dashboard answers to loopback names only\n".to_vec(),
                )
            }
            Verdict::Unauthorized => {
                return respond(
                    StatusCode::UNAUTHORIZED,
                    "text/plain",
                    b"open the URL dhp-chaos printed (/login?token=...), or send 'Authorization: Bearer <token>'\n"
                        .to_vec(),
                )
            }
            Verdict::Login => {
                let mut r = respond(StatusCode::SEE_OTHER, "text/plain", Vec::new());
                r.headers_mut().insert(header::LOCATION, HeaderValue::from_static("/"));
                if let Ok(c) = HeaderValue::from_str(&self.guard.set_cookie()) {
                    r.headers_mut().insert(header::SET_COOKIE, c);
                }
                return r;
            }
        }
        let (method, target) = (head.method.as_str(), head.target.as_str());
        if method != "GET" && method != "HEAD" {
            return respond(StatusCode::METHOD_NOT_ALLOWED, "text/plain", b"only GET\n".to_vec());
        }
        let path = target.split(['?', '#']).next().unwrap_or("/");
        match path {
            "/" | "/index.html" => match super::render(&self.dir(), Some(&self.live_section())) {
                Ok(p) => respond(StatusCode::OK, "text/html; charset=utf-8", p.into_bytes()),
                Err(e) => respond(StatusCode::INTERNAL_SERVER_ERROR, "text/plain", e.chain().into_bytes()),
            },
            "/state.json" => {
                let body = serde_json::to_vec(&self.snapshot().0).unwrap_or_default();
                respond(StatusCode::OK, "application/json", body)
            }
            "/events" => self.events(shutdown),
            _ => self.file(path),
        }
    }

    /// `/events`: a stream written by a thread of its own until it has
    /// lasted [`STREAM`], the run ended, or the client is gone.
    fn events(self: &Arc<Self>, shutdown: &Arc<AtomicBool>) -> Response {
        let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(16);
        let (me, shutdown) = (Arc::clone(self), Arc::clone(shutdown));
        std::thread::spawn(move || me.stream(&tx, &shutdown));
        let mut r = Response::new(dhp_http::channel_body(rx));
        r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        r
    }

    fn stream(&self, tx: &tokio::sync::mpsc::Sender<Bytes>, shutdown: &AtomicBool) {
        let send = |text: String| tx.blocking_send(Bytes::from(text)).is_ok();
        if !send("retry: 500\n\n".into()) {
            return;
        }
        let (mut seen, mut seen_rounds) = (u64::MAX, None::<u64>);
        let mut last_sent = Instant::now();
        let began = Instant::now();
        loop {
            let (state, v, rv) = self.snapshot();
            if v != seen {
                seen = v;
                let data = serde_json::to_string(&state).unwrap_or_default();
                if !send(format!("event: live\ndata: {data}\n\n")) {
                    return;
                }
                last_sent = Instant::now();
            }
            if seen_rounds.is_some_and(|r| r != rv) && !send(format!("event: rounds\ndata: {}\n\n", state.rounds_done))
            {
                return;
            }
            seen_rounds = Some(rv);
            if let Some(code) = state.exit_code {
                send(format!("event: done\ndata: {code}\n\n"));
                return;
            }
            if last_sent.elapsed() > Duration::from_secs(10) {
                // a comment keeps proxies and clients from timing the stream out
                if !send(": keep-alive\n\n".into()) {
                    return;
                }
                last_sent = Instant::now();
            }
            if shutdown.load(Ordering::SeqCst) || began.elapsed() >= STREAM {
                return;
            }
            std::thread::sleep(TICK);
        }
    }

    /// A file (or a directory listing) of the run directory; nothing outside it.
    fn file(&self, path: &str) -> Response {
        let not_found = || respond(StatusCode::NOT_FOUND, "text/plain", b"not found\n".to_vec());
        let dir = self.dir();
        let rel = Path::new(path.trim_start_matches('/'));
        if rel.components().any(|c| !matches!(c, Component::Normal(_))) || path.contains('%') {
            return not_found();
        }
        let full = dir.join(rel);
        let inside = match (full.canonicalize(), dir.canonicalize()) {
            (Ok(f), Ok(d)) => f.starts_with(d),
            _ => false,
        };
        if !inside {
            return not_found();
        }
        if full.is_dir() {
            let Ok(entries) = std::fs::read_dir(&full) else { return not_found() };
            let mut names: Vec<String> = entries
                .filter_map(|e| e.ok())
                .map(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    if e.path().is_dir() {
                        format!("{n}/")
                    } else {
                        n
                    }
                })
                .collect();
            names.sort();
            let base =
                if path.ends_with('/') { String::new() } else { format!("{}/", path.rsplit('/').next().unwrap_or("")) };
            let body = format!(
                "<!doctype html><meta charset=\"utf-8\"><title>{0}</title><h1>{0}</h1><ul>{1}</ul>",
                esc(path),
                names
                    .iter()
                    .map(|n| format!("<li><a href=\"{}{}\">{}</a></li>", esc(&base), esc(n), esc(n)))
                    .collect::<String>()
            );
            return respond(StatusCode::OK, "text/html; charset=utf-8", body.into_bytes());
        }
        let ctype = match full.extension().and_then(|e| e.to_str()) {
            Some("html") => "text/html; charset=utf-8",
            Some("svg") => "image/svg+xml",
            Some("json") => "application/json",
            Some("png") => "image/png",
            _ => "text/plain; charset=utf-8",
        };
        match std::fs::read(&full) {
            Ok(b) => respond(StatusCode::OK, ctype, b),
            Err(_) => not_found(),
        }
    }

    /// The live section of the page, filled with the state now; the page's
    /// script keeps it current from `/events`.
    pub fn live_section(&self) -> String {
        let (s, _, _) = self.snapshot();
        let row =
            |id: &str, label: &str, v: String| format!("<tr><th>{label}</th><td id=\"{id}\">{}</td></tr>", esc(&v));
        let mut h = String::from("<section id=\"live\"><h2>Live</h2>");
        h.push_str(&format!(
            "<p id=\"live-status\">{}</p><table id=\"live-table\">",
            esc(&match (s.round, s.exit_code) {
                (_, Some(c)) => format!("run ended, exit code {c}"),
                (Some(r), _) => format!("round {r} in progress"),
                (None, _) => "between rounds".to_string(),
            })
        ));
        h.push_str(&row("live-round", "round in progress", s.round.map_or("none".into(), |r| r.to_string())));
        h.push_str(&row("live-seed", "seed", s.seed.to_string()));
        h.push_str(&row("live-elapsed", "elapsed", format!("{:.1} s", s.elapsed_s)));
        h.push_str(&row("live-terminal", "handoffs ended", format!("{}/{}", s.terminal, s.handoffs)));
        h.push_str(&row("live-faults-n", "faults so far", s.faults.to_string()));
        h.push_str(&row("live-kills", "kills so far", s.kills.to_string()));
        h.push_str(&row("live-pauses", "pauses so far", s.pauses.to_string()));
        h.push_str(&row("live-failpoints", "failpoint kills so far", s.failpoint_kills.to_string()));
        h.push_str(&row(
            "live-spawned",
            "workers / supervisors started",
            format!("{} / {}", s.spawned_workers, s.spawned_supervisors),
        ));
        h.push_str(&row("live-rounds-done", "rounds finished", s.rounds_done.to_string()));
        h.push_str(&row("live-events", "live updates received", "0".into()));
        h.push_str("</table><h3>Latest faults</h3><ol id=\"live-faults\">");
        for (t, kind, sig, victim) in &s.recent_faults {
            h.push_str(&format!("<li>{t:.2} s {} {} {}</li>", esc(kind), esc(sig), esc(victim)));
        }
        h.push_str("</ol></section>\n");
        h.push_str(LIVE_SCRIPT);
        h
    }
}

/// The page's only script: the live section from `/events`, and the
/// report below it fetched again when a round ended.
const LIVE_SCRIPT: &str = r#"<script>
(function () {
  var n = 0;
  function set(id, v) { var e = document.getElementById(id); if (e) { e.textContent = v; } }
  var shown = document.getElementById('live-rounds-done');
  var rounds = shown ? parseInt(shown.textContent, 10) : 0;
  var es = new EventSource('/events');
  es.addEventListener('live', function (ev) {
    var s = JSON.parse(ev.data);
    n += 1;
    // a round ended since the page was made (perhaps between two streams): its rows
    if (s.rounds_done !== rounds) { rounds = s.rounds_done; reload(); }
    set('live-events', String(n));
    set('live-status', s.exit_code !== null ? 'run ended, exit code ' + s.exit_code
        : (s.round !== null ? 'round ' + s.round + ' in progress' : 'between rounds'));
    set('live-round', s.round === null ? 'none' : String(s.round));
    set('live-seed', String(s.seed));
    set('live-elapsed', s.elapsed_s.toFixed(1) + ' s');
    set('live-terminal', s.terminal + '/' + s.handoffs);
    set('live-faults-n', String(s.faults));
    set('live-kills', String(s.kills));
    set('live-pauses', String(s.pauses));
    set('live-failpoints', String(s.failpoint_kills));
    set('live-spawned', s.spawned_workers + ' / ' + s.spawned_supervisors);
    set('live-rounds-done', String(s.rounds_done));
    var ol = document.getElementById('live-faults');
    if (ol) {
      ol.textContent = '';
      s.recent_faults.forEach(function (f) {
        var li = document.createElement('li');
        li.textContent = f[0].toFixed(2) + ' s ' + f[1] + ' ' + f[2] + ' ' + f[3];
        ol.appendChild(li);
      });
    }
  });
  function reload() {
    fetch('/').then(function (r) { return r.text(); }).then(function (t) {
      var d = new DOMParser().parseFromString(t, 'text/html');
      var fresh = d.getElementById('report'), old = document.getElementById('report');
      if (fresh && old) { old.replaceWith(fresh); }
    });
  }
  es.addEventListener('rounds', reload);
  es.addEventListener('done', function (ev) { set('live-status', 'run ended, exit code ' + ev.data); es.close(); reload(); });
})();
</script>
"#;

/// An answer of `ctype` that no cache keeps.
fn respond(status: StatusCode, ctype: &'static str, body: Vec<u8>) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(ctype));
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_addresses_are_accepted() {
        assert!(parse_addr("127.0.0.1:0").is_ok());
        assert!(parse_addr("[::1]:8080").is_ok());
        assert!(parse_addr("localhost:8080").is_ok());
        let e = parse_addr("0.0.0.0:8080").unwrap_err();
        assert!(e.contains("not a loopback address"), "{e}");
        assert!(parse_addr("192.0.2.1:80").is_err());
        assert!(parse_addr("nonsense").is_err());
    }

    #[test]
    fn a_tail_keeps_a_partial_line_for_later() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("h.jsonl");
        std::fs::write(&p, "a\nb").unwrap();
        let mut t = Tail { path: p.clone(), ..Tail::default() };
        assert_eq!(t.new_lines(), vec!["a".to_string()]);
        std::fs::write(&p, "a\nbc\n").unwrap();
        assert_eq!(t.new_lines(), vec!["bc".to_string()]);
    }
}
