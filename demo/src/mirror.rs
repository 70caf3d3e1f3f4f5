//! A local stand-in for the Wikipedia REST API summary endpoint.
//!
//! `GET /api/rest_v1/page/summary/{title}` answers with a JSON document of
//! the same shape Wikipedia returns (type, title, titles, pageid,
//! content_urls, extract, extract_html, …), generated deterministically
//! from the seed and the title, so anyone can recompute what the mirror
//! served ([`page_body`]). Each page answers after a seeded delay. The
//! mirror counts every request per title, and it can *hold* the first
//! request for one title — the response is not written until
//! [`Mirror::release_hold`] — so a worker killed meanwhile dies with its
//! request in flight, provably.
//!
//! The HTTP server is the project's one stack (dhp-http) under its shared
//! limits; at the cap the oldest connection not being answered is closed
//! for a newcomer, so idle or trickling clients cannot keep a page worker
//! out. One mirror can listen on several sockets (e.g. the loopback of two
//! network namespaces) and keeps one set of counters, and one connection
//! cap, for all of them.

use crate::titles::{self, SplitMix64};
use dhp_http::axum::http::{header, HeaderValue, Method, StatusCode, Uri};
use dhp_http::axum::response::Response;
use dhp_http::axum::Router;
use dhp_http::{AtCap, Background, Limits};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The path prefix of the summary endpoint.
pub const SUMMARY_PREFIX: &str = "/api/rest_v1/page/summary/";

const WORDS: &[&str] = &[
    "the",
    "of",
    "and",
    "a",
    "in",
    "is",
    "was",
    "for",
    "by",
    "with",
    "as",
    "on",
    "that",
    "from",
    "which",
    "an",
    "machine",
    "theory",
    "process",
    "system",
    "work",
    "number",
    "state",
    "computer",
    "program",
    "language",
    "network",
    "protocol",
    "history",
    "century",
    "published",
    "known",
    "first",
    "later",
    "early",
    "general",
    "mathematics",
    "logic",
    "engineering",
    "science",
    "design",
    "proof",
    "model",
    "memory",
    "signal",
    "failure",
    "durable",
    "record",
    "result",
    "method",
    "describes",
    "developed",
    "introduced",
    "widely",
    "used",
    "modern",
    "university",
    "research",
    "paper",
    "problem",
    "solution",
    "algorithm",
    "data",
    "time",
    "order",
    "message",
];

/// Milliseconds the mirror waits before answering `title` (seeded).
pub fn delay_ms(seed: u64, title: &str, min_ms: u64, max_ms: u64) -> u64 {
    SplitMix64::for_label(seed ^ 0xDE1A_u64, title).range(min_ms, max_ms)
}

/// The exact bytes the mirror serves for `title` under `seed`.
pub fn page_body(seed: u64, title: &str) -> Vec<u8> {
    serde_json::to_vec(&page_json(seed, title)).expect("a JSON value serializes")
}

/// The summary document for `title` (Wikipedia's shape, synthetic text).
pub fn page_json(seed: u64, title: &str) -> Value {
    let mut rng = SplitMix64::for_label(seed, title);
    let shown = titles::display(title);
    let enc = titles::encode_title(title);
    let pageid = rng.range(1_000, 70_000_000);
    let revision = rng.range(900_000_000, 1_300_000_000);
    let qid = rng.range(1, 130_000_000);
    let n_sentences = rng.range(3, 40);
    let mut sentences = Vec::new();
    for s in 0..n_sentences {
        let n_words = rng.range(6, 24);
        let mut words: Vec<String> = Vec::new();
        if s == 0 {
            words.push(shown.clone());
            words.push("is".into());
        }
        for _ in 0..n_words {
            words.push(WORDS[(rng.next_u64() % WORDS.len() as u64) as usize].to_string());
        }
        let mut text = words.join(" ");
        if let Some(first) = text.get(0..1) {
            text = first.to_uppercase() + &text[1..];
        }
        sentences.push(text + ".");
    }
    let extract = sentences.join(" ");
    let html_escaped = extract.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let day = rng.range(1, 28);
    let month = rng.range(1, 12);
    let (h, m, s) = (rng.range(0, 23), rng.range(0, 59), rng.range(0, 59));
    let tid = format!(
        "{:08x}-{:04x}-11ef-{:04x}-{:012x}",
        rng.next_u64() as u32,
        rng.next_u64() as u16,
        rng.next_u64() as u16,
        rng.next_u64() & 0xffff_ffff_ffff
    );
    let wiki = format!("https://en.wikipedia.org/wiki/{enc}");
    let mobile = format!("https://en.m.wikipedia.org/wiki/{enc}");
    let display_html = format!("<span class=\"mw-page-title-main\">{shown}</span>");
    json!({
        "type": "standard",
        "title": shown,
        "displaytitle": display_html,
        "namespace": {"id": 0, "text": ""},
        "wikibase_item": format!("Q{qid}"),
        "titles": {"canonical": title, "normalized": shown, "display": display_html},
        "pageid": pageid,
        "lang": "en",
        "dir": "ltr",
        "revision": revision.to_string(),
        "tid": tid,
        "timestamp": format!("2025-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}Z"),
        "description": format!("Article about {shown} (offline mirror, seed {seed})"),
        "description_source": "local",
        "content_urls": {
            "desktop": {
                "page": wiki,
                "revisions": format!("{wiki}?action=history"),
                "edit": format!("{wiki}?action=edit"),
                "talk": format!("https://en.wikipedia.org/wiki/Talk:{enc}"),
            },
            "mobile": {
                "page": mobile,
                "revisions": format!("https://en.m.wikipedia.org/wiki/Special:History/{enc}"),
                "edit": format!("{mobile}?action=edit"),
                "talk": format!("https://en.m.wikipedia.org/wiki/Talk:{enc}"),
            },
        },
        "extract": extract,
        "extract_html": format!("<p>{html_escaped}</p>"),
    })
}

/// What the mirror is told to serve.
#[derive(Debug, Clone)]
pub struct MirrorConfig {
    pub seed: u64,
    pub titles: Vec<String>,
    /// Response delay range per page, milliseconds.
    pub min_delay_ms: u64,
    pub max_delay_ms: u64,
    /// Hold the first request for this title until released.
    pub hold: Option<String>,
    /// Give up holding after this long (the response is then sent).
    pub hold_timeout: Duration,
}

/// The first held request: when it arrived (seconds since the epoch).
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    pub title: String,
    pub at: f64,
}

#[derive(Default)]
struct HoldState {
    held: Option<Held>,
    released: bool,
    /// The held request's response was written (after release or timeout).
    answered_at: Option<f64>,
}

struct Inner {
    cfg: MirrorConfig,
    known: HashSet<String>,
    counts: Mutex<BTreeMap<String, u64>>,
    unknown: Mutex<u64>,
    hold: Mutex<HoldState>,
    cv: Condvar,
}

/// A running mirror.
pub struct Mirror {
    inner: Arc<Inner>,
    server: Option<Background>,
    addrs: Vec<SocketAddr>,
}

fn now() -> f64 {
    dhp_core::envelope::now()
}

impl Mirror {
    /// Serve on the given listeners (each typically `127.0.0.1:0`).
    pub fn start(cfg: MirrorConfig, listeners: Vec<TcpListener>) -> anyhow::Result<Mirror> {
        anyhow::ensure!(!listeners.is_empty(), "the mirror needs at least one listener");
        let known = cfg.titles.iter().cloned().collect();
        let inner = Arc::new(Inner {
            cfg,
            known,
            counts: Mutex::new(BTreeMap::new()),
            unknown: Mutex::new(0),
            hold: Mutex::new(HoldState::default()),
            cv: Condvar::new(),
        });
        let addrs = listeners.iter().map(TcpListener::local_addr).collect::<std::io::Result<Vec<_>>>()?;
        // a held request is answered when released (or at its timeout)
        let slowest = inner.cfg.hold_timeout + Duration::from_millis(inner.cfg.max_delay_ms) + Duration::from_secs(5);
        let limits = Limits {
            at_cap: AtCap::MakeRoom,
            request_timeout: dhp_http::REQUEST_TIMEOUT.max(slowest),
            ..Limits::new("mirror")
        };
        let server = dhp_http::spawn(listeners, router(inner.clone()), limits, "mirror")?;
        Ok(Mirror { inner, server: Some(server), addrs })
    }

    /// Bind `127.0.0.1:0` in the current network namespace.
    pub fn loopback_listener() -> std::io::Result<TcpListener> {
        TcpListener::bind("127.0.0.1:0")
    }

    /// The addresses served, in listener order.
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// Base URL of listener `i` (`http://127.0.0.1:PORT`).
    pub fn base_url(&self, i: usize) -> String {
        format!("http://{}", self.addrs[i])
    }

    /// Requests per known title so far (titles never requested: 0).
    pub fn counts(&self) -> BTreeMap<String, u64> {
        let c = self.inner.counts.lock().expect("mirror counts lock");
        self.inner.cfg.titles.iter().map(|t| (t.clone(), c.get(t).copied().unwrap_or(0))).collect()
    }

    /// Requests for paths or titles the mirror does not serve.
    pub fn unknown_requests(&self) -> u64 {
        *self.inner.unknown.lock().expect("mirror lock")
    }

    /// Wait until the held request has arrived (or `timeout`).
    pub fn wait_held(&self, timeout: Duration) -> Option<Held> {
        let deadline = Instant::now() + timeout;
        let mut st = self.inner.hold.lock().expect("mirror hold lock");
        loop {
            if let Some(h) = &st.held {
                return Some(h.clone());
            }
            let left = deadline.checked_duration_since(Instant::now()).filter(|d| !d.is_zero())?;
            st = self.inner.cv.wait_timeout(st, left).expect("mirror hold lock").0;
        }
    }

    /// When the held request was answered, if it was (it must not have
    /// been when the worker is killed).
    pub fn held_answered_at(&self) -> Option<f64> {
        self.inner.hold.lock().expect("mirror hold lock").answered_at
    }

    /// Let the held request (if any) be answered.
    pub fn release_hold(&self) {
        let mut st = self.inner.hold.lock().expect("mirror hold lock");
        st.released = true;
        self.inner.cv.notify_all();
    }
}

impl Drop for Mirror {
    fn drop(&mut self) {
        self.release_hold();
        if let Some(s) = self.server.take() {
            s.stop();
        }
    }
}

/// Every request, answered by [`handle`] on a blocking thread (it may
/// wait for a held request's release).
fn router(inner: Arc<Inner>) -> Router {
    Router::new().fallback(move |method: Method, uri: Uri| {
        let inner = inner.clone();
        async move {
            let target = uri.path_and_query().map_or_else(|| uri.path().to_string(), |p| p.as_str().to_string());
            let answered = tokio::task::spawn_blocking(move || handle(&inner, method.as_str(), &target)).await;
            let (status, body) = answered.unwrap_or_else(|_| (500, b"{}".to_vec()));
            respond(status, body)
        }
    })
}

/// A response as Wikipedia's summary endpoint sends it.
fn respond(status: u16, body: Vec<u8>) -> Response {
    let mut r = Response::new(body.into());
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(
            "application/json; charset=utf-8; profile=\"https://www.mediawiki.org/wiki/Specs/Summary/1.5.0\"",
        ),
    );
    h.insert(header::SERVER, HeaderValue::from_static("dhp-demo-mirror"));
    r
}

/// Answer one request: (status, body). Counts it, holds it if asked to.
fn handle(inner: &Inner, method: &str, target: &str) -> (u16, Vec<u8>) {
    let path = target.split('?').next().unwrap_or("");
    let title = (method == "GET")
        .then(|| path.strip_prefix(SUMMARY_PREFIX))
        .flatten()
        .and_then(titles::decode_title)
        .filter(|t| inner.known.contains(t));
    let Some(title) = title else {
        *inner.unknown.lock().expect("mirror lock") += 1;
        let body = json!({
            "type": "https://mediawiki.org/wiki/HyperSwitch/errors/not_found",
            "title": "Not found.",
            "method": method.to_lowercase(),
            "detail": "Page or revision not found.",
            "uri": format!("/en.wikipedia.org/v1/page/summary/{}", path.rsplit('/').next().unwrap_or("")),
        });
        return (404, serde_json::to_vec(&body).expect("json"));
    };
    *inner.counts.lock().expect("mirror counts lock").entry(title.clone()).or_insert(0) += 1;
    let mut holding = false;
    if inner.cfg.hold.as_deref() == Some(title.as_str()) {
        let mut st = inner.hold.lock().expect("mirror hold lock");
        if st.held.is_none() {
            st.held = Some(Held { title: title.clone(), at: now() });
            holding = true;
            inner.cv.notify_all();
            let deadline = Instant::now() + inner.cfg.hold_timeout;
            while !st.released {
                let Some(left) = deadline.checked_duration_since(Instant::now()) else { break };
                st = inner.cv.wait_timeout(st, left).expect("mirror hold lock").0;
            }
            // Answered from here on (the write itself may fail: the
            // client is usually dead by now).
            st.answered_at = Some(now());
        }
    }
    if !holding {
        let d = delay_ms(inner.cfg.seed, &title, inner.cfg.min_delay_ms, inner.cfg.max_delay_ms);
        std::thread::sleep(Duration::from_millis(d));
    }
    (200, page_body(inner.cfg.seed, &title))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn get(addr: SocketAddr, path: &str) -> (u16, Vec<u8>) {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).unwrap();
        let text = String::from_utf8_lossy(&buf).to_string();
        let status: u16 = text[9..12].parse().unwrap();
        let pos = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        (status, buf[pos..].to_vec())
    }

    #[test]
    fn serves_counts_and_holds() {
        let titles = vec!["Alan_Turing".to_string(), "Gödel's_incompleteness_theorems".to_string()];
        let m = Mirror::start(
            MirrorConfig {
                seed: 9,
                titles: titles.clone(),
                min_delay_ms: 0,
                max_delay_ms: 2,
                hold: Some(titles[1].clone()),
                hold_timeout: Duration::from_secs(10),
            },
            vec![Mirror::loopback_listener().unwrap(), Mirror::loopback_listener().unwrap()],
        )
        .unwrap();
        let (st, body) = get(m.addrs()[0], &format!("{SUMMARY_PREFIX}Alan_Turing"));
        assert_eq!(st, 200);
        assert_eq!(body, page_body(9, "Alan_Turing"));
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["title"], "Alan Turing");
        assert_eq!(v["titles"]["canonical"], "Alan_Turing");
        assert!(v["extract"].as_str().unwrap().starts_with("Alan Turing is"));
        assert_eq!(get(m.addrs()[1], &format!("{SUMMARY_PREFIX}Nope")).0, 404);
        assert_eq!(m.unknown_requests(), 1);
        // The held title blocks until released.
        let addr = m.addrs()[1];
        let path = format!("{SUMMARY_PREFIX}{}", titles::encode_title(&titles[1]));
        let t = std::thread::spawn(move || get(addr, &path));
        let held = m.wait_held(Duration::from_secs(5)).expect("held");
        assert_eq!(held.title, titles[1]);
        std::thread::sleep(Duration::from_millis(50));
        assert!(m.held_answered_at().is_none());
        assert!(!t.is_finished());
        m.release_hold();
        let (st, body) = t.join().unwrap();
        assert_eq!((st, body), (200, page_body(9, &titles[1])));
        let c = m.counts();
        assert_eq!(c["Alan_Turing"], 1);
        assert_eq!(c[&titles[1]], 1);
        assert_ne!(page_body(9, "Alan_Turing"), page_body(10, "Alan_Turing"));
    }
}
