//! The dashboard's HTTP surface (docs/dashboard.md, "Security"). Every
//! request passes, in order: the Host check (DNS rebinding), the
//! cross-origin check (an `Origin` that is not ours, `Sec-Fetch-Site:
//! cross-site` or `same-site`: 403), the method (GET and HEAD; POST only to
//! `/login`), and — except for `/login` — authentication: `Authorization:
//! Bearer <token>` or the session cookie `/login` set, each compared in
//! constant time. No response carries a CORS header.

use super::live::Live;
use super::page;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Router;
use dhp_core::store::dashboard_view::{Filter, MAX_PAGE};
use serde_json::json;
use std::collections::BTreeSet;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use subtle::ConstantTimeEq;
use tokio::sync::watch;

/// The session cookie's name.
pub const COOKIE: &str = "dhp_dashboard_session";
/// Largest login body.
const MAX_LOGIN_BODY: usize = 4096;
/// SSE comment interval on an idle stream.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// Rows per page unless `limit` says otherwise.
const DEFAULT_PAGE: usize = 50;

/// What every request shares.
pub struct App {
    pub live: Arc<Live>,
    /// The bearer token; `None` with `--insecure-no-token`.
    pub token: Option<String>,
    /// The random session secret the login cookie carries (never the token).
    pub session: String,
    pub guard: Guard,
    /// Set when the server stops: open event streams end.
    pub closing: watch::Receiver<bool>,
}

/// The names and origin this server answers to.
pub struct Guard {
    hosts: BTreeSet<String>,
    port: u16,
}

pub use crate::allowed_host::check_allowed_host;
use crate::allowed_host::ip_name;

impl Guard {
    pub fn new(local: SocketAddr, allowed: &[String]) -> Guard {
        let mut hosts: BTreeSet<String> = ["localhost", "127.0.0.1", "[::1]"].into_iter().map(String::from).collect();
        if !local.ip().is_unspecified() {
            hosts.insert(ip_name(local.ip()));
        }
        hosts.extend(allowed.iter().cloned());
        Guard { hosts, port: local.port() }
    }

    /// The host part of a `Host` value (lowercase, port checked and removed).
    fn host_name(value: &str) -> Option<(String, Option<u16>)> {
        let v = value.trim().to_ascii_lowercase();
        let (name, rest) = if v.starts_with('[') {
            let end = v.find(']')?;
            (v[..=end].to_string(), v[end + 1..].to_string())
        } else {
            match v.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), format!(":{p}")),
                None => (v.clone(), String::new()),
            }
        };
        if rest.is_empty() {
            return Some((name, None));
        }
        let port = rest.strip_prefix(':')?.parse::<u16>().ok()?;
        Some((name, Some(port)))
    }

    fn host_ok(&self, headers: &HeaderMap) -> bool {
        let Some(v) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else { return false };
        Self::host_name(v).is_some_and(|(h, p)| self.hosts.contains(&h) && p.unwrap_or(80) == self.port)
    }

    fn origin_ok(&self, origin: &str) -> bool {
        let o = origin.trim().to_ascii_lowercase();
        let Some(rest) = o.strip_prefix("http://") else { return false };
        Self::host_name(rest).is_some_and(|(h, p)| self.hosts.contains(&h) && p.unwrap_or(80) == self.port)
    }

    /// Why a request is refused before anything else is looked at.
    pub fn refusal(&self, headers: &HeaderMap) -> Option<&'static str> {
        if !self.host_ok(headers) {
            return Some(
                "the Host header does not name this server (start it with --allow-host NAME to serve that name)",
            );
        }
        let cross_site = headers
            .get("sec-fetch-site")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("cross-site") || v.eq_ignore_ascii_case("same-site"));
        let foreign = headers.get(header::ORIGIN).is_some_and(|o| !o.to_str().is_ok_and(|o| self.origin_ok(o)));
        (cross_site || foreign).then_some("cross-origin requests are not served (this server grants no CORS)")
    }
}

fn ct_eq(a: &str, b: &str) -> bool {
    bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

impl App {
    fn authorized(&self, headers: &HeaderMap) -> bool {
        let Some(token) = &self.token else { return true };
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|g| ct_eq(g, token));
        bearer || cookie(headers, COOKIE).is_some_and(|c| ct_eq(&c, &self.session))
    }
}

/// The value of cookie `name`, if the request carries it.
fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(|kv| {
        let (k, v) = kv.trim().split_once('=')?;
        (k == name).then(|| v.to_string())
    })
}

/// Decode `%XX` and `+` of a query or form value; `None` when malformed.
pub fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// The decoded `key=value` pairs of a query string or form body.
fn pairs(q: &str) -> Option<Vec<(String, String)>> {
    q.split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            Some((percent_decode(k)?, percent_decode(v)?))
        })
        .collect()
}

fn param<'a>(ps: &'a [(String, String)], k: &str) -> Option<&'a str> {
    ps.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
}

/// Headers every response carries.
fn harden(mut r: Response) -> Response {
    let h = r.headers_mut();
    for (k, v) in [
        ("cache-control", "no-store"),
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "no-referrer"),
        (
            "content-security-policy",
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; \
             form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    ] {
        h.insert(k, HeaderValue::from_static(v));
    }
    r
}

fn error(status: StatusCode, msg: &str) -> Response {
    (status, axum::Json(json!({"error": msg}))).into_response()
}

fn html(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
}

fn unauthorized(wants_page: bool) -> Response {
    let mut r = if wants_page {
        html(StatusCode::UNAUTHORIZED, page::login_page(None))
    } else {
        error(StatusCode::UNAUTHORIZED, "Unauthorized: log in at /login or send 'Authorization: Bearer <token>'")
    };
    r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    r
}

pub fn router(app: Arc<App>) -> Router {
    Router::new().fallback(handle).with_state(app)
}

async fn handle(State(app): State<Arc<App>>, req: Request) -> Response {
    let r = route(app, req).await;
    let result = match r.status() {
        StatusCode::FORBIDDEN => 1,
        StatusCode::UNAUTHORIZED => 2,
        _ => 0,
    };
    crate::metrics::DASHBOARD_REQUESTS.inc(result);
    harden(r)
}

async fn route(app: Arc<App>, req: Request) -> Response {
    let headers = req.headers().clone();
    if let Some(why) = app.guard.refusal(&headers) {
        return error(StatusCode::FORBIDDEN, &format!("Forbidden: {why}"));
    }
    let path = req.uri().path().to_string();
    // the path only: a query may carry the token (/login?token=)
    tracing::debug!("dashboard: {} {path}", req.method());
    let query = req.uri().query().unwrap_or("").to_string();
    let Some(params) = pairs(&query) else {
        return error(StatusCode::BAD_REQUEST, "the query string is not valid percent-encoded UTF-8");
    };
    let method = req.method().clone();
    if path == "/login" {
        return match method {
            Method::GET | Method::HEAD => match param(&params, "token") {
                Some(t) => login(&app, t),
                None => html(StatusCode::OK, page::login_page(None)),
            },
            Method::POST => {
                let body = match axum::body::to_bytes(req.into_body(), MAX_LOGIN_BODY).await {
                    Ok(b) => b,
                    Err(_) => return error(StatusCode::PAYLOAD_TOO_LARGE, "the login body is too large"),
                };
                let form = std::str::from_utf8(&body).ok().and_then(pairs);
                match form.as_deref().and_then(|f| param(f, "token")) {
                    Some(t) => login(&app, t),
                    None => error(StatusCode::BAD_REQUEST, "give token=<token> (application/x-www-form-urlencoded)"),
                }
            }
            _ => error(StatusCode::METHOD_NOT_ALLOWED, "GET or POST /login"),
        };
    }
    if method != Method::GET && method != Method::HEAD {
        return error(StatusCode::METHOD_NOT_ALLOWED, "the dashboard is read-only: GET and HEAD only");
    }
    if path == "/app.css" {
        // the login form's style: no data in it
        return ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], page::APP_CSS).into_response();
    }
    if !app.authorized(&headers) {
        return unauthorized(path == "/");
    }
    match path.as_str() {
        "/" => html(StatusCode::OK, page::index()),
        "/app.js" => ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], page::APP_JS).into_response(),
        "/api/summary" => axum::Json(app.live.summary()).into_response(),
        "/api/handoffs" => handoffs(&app, &params).await,
        "/api/events" => events(&app),
        p => match p.strip_prefix("/api/handoff/") {
            Some(hid) => detail(&app, hid).await,
            None => error(StatusCode::NOT_FOUND, "no such page"),
        },
    }
}

/// A valid token sets the session cookie and sends the browser to `/`
/// (the token leaves the address bar); anything else is 401.
fn login(app: &App, token: &str) -> Response {
    let ok = app.token.as_deref().is_none_or(|t| ct_eq(token, t));
    if !ok {
        let mut r = html(StatusCode::UNAUTHORIZED, page::login_page(Some("That token is not valid.")));
        r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return r;
    }
    let cookie = format!("{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/", app.session);
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r.headers_mut().insert(header::LOCATION, HeaderValue::from_static("/"));
    r
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, dhp_core::Error> + Send + 'static,
) -> Result<T, Response> {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(error(StatusCode::SERVICE_UNAVAILABLE, &format!("{}: {e}", e.kind()))),
        Err(e) => Err(error(StatusCode::INTERNAL_SERVER_ERROR, &format!("internal error: {e}"))),
    }
}

async fn handoffs(app: &Arc<App>, params: &[(String, String)]) -> Response {
    let filter = match Filter::new(param(params, "status"), param(params, "q")) {
        Ok(f) => f,
        Err(e) => return error(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    let after = param(params, "after").filter(|a| !a.is_empty()).map(str::to_string);
    if let Some(a) = &after {
        if a.len() > 64 || !a.bytes().all(|b| b.is_ascii_hexdigit()) {
            return error(StatusCode::BAD_REQUEST, "after must be a handoff id (hex)");
        }
    }
    let limit = match param(params, "limit").map(str::parse::<usize>) {
        None => DEFAULT_PAGE,
        Some(Ok(n)) if (1..=MAX_PAGE).contains(&n) => n,
        Some(_) => return error(StatusCode::BAD_REQUEST, &format!("limit must be an integer in [1, {MAX_PAGE}]")),
    };
    let live = app.live.clone();
    let f = filter.clone();
    match blocking(move || live.page(&f, after.as_deref(), limit)).await {
        Ok(page) => axum::Json(page).into_response(),
        Err(r) => r,
    }
}

async fn detail(app: &Arc<App>, hid: &str) -> Response {
    if dhp_core::envelope::check_hid(hid).is_err() {
        return error(StatusCode::BAD_REQUEST, "not a handoff id (64 hex characters)");
    }
    let (live, h) = (app.live.clone(), hid.to_string());
    match blocking(move || live.view.detail(&h)).await {
        Ok(Some((row, mut d))) => {
            d["owners_seen"] = app.live.history(&row);
            axum::Json(d).into_response()
        }
        Ok(None) => error(StatusCode::NOT_FOUND, "no such handoff"),
        Err(r) => r,
    }
}

/// The event stream: a `summary` event at once, then every delta the
/// poller broadcasts (`delta`), `resync` if this page fell behind, until
/// the page goes away or the server stops.
fn events(app: &Arc<App>) -> Response {
    let first = Event::default().event("summary").data(app.live.summary().to_string());
    let rx = app.live.subscribe();
    let closing = app.closing.clone();
    let stream = futures_util::stream::unfold((Some(first), rx, closing), |(mut first, mut rx, closing)| async move {
        if let Some(ev) = first.take() {
            return Some((Ok::<Event, Infallible>(ev), (None, rx, closing)));
        }
        if *closing.borrow() {
            return None;
        }
        let ev = {
            let stop = closing.clone();
            let mut stop = stop;
            tokio::select! {
                r = rx.recv() => match r {
                    Ok(text) => Event::default().event("delta").data(text.as_str()),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        Event::default().event("resync").data("{}")
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                },
                _ = stop.wait_for(|c| *c) => return None,
            }
        };
        Some((Ok(ev), (None, rx, closing)))
    });
    let mut r = Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)).into_response();
    r.headers_mut().insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding() {
        assert_eq!(percent_decode("a%20b+c").as_deref(), Some("a b c"));
        assert_eq!(percent_decode("%zz"), None);
        assert_eq!(percent_decode("%4"), None);
        assert_eq!(percent_decode("%ff"), None);
    }

    #[test]
    fn origins_and_hosts() {
        let g = Guard::new("127.0.0.1:8473".parse().unwrap(), &[]);
        assert!(g.origin_ok("http://127.0.0.1:8473"));
        assert!(g.origin_ok("http://localhost:8473"));
        assert!(!g.origin_ok("http://localhost:3000"));
        assert!(!g.origin_ok("http://evil.example:8473"));
        assert!(!g.origin_ok("null"));
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_static("localhost:8473"));
        assert!(g.refusal(&h).is_none());
        h.insert(header::HOST, HeaderValue::from_static("evil.example:8473"));
        assert!(g.refusal(&h).is_some());
        h.insert(header::HOST, HeaderValue::from_static("localhost:8473"));
        h.insert("sec-fetch-site", HeaderValue::from_static("cross-site"));
        assert!(g.refusal(&h).is_some());
    }
}
