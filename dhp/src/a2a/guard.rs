//! Who may talk to the server at all, checked before a token or a body is
//! looked at (docs/a2a.md, "Threat model"):
//!
//! - `Host` must name this server: the bound address, a loopback name, or a
//!   name given with `--allow-host`. A DNS-rebinding page reaches us under
//!   its own name, so its requests are refused.
//! - A browser request from another origin (an `Origin` header that is not
//!   this server's own, or `Sec-Fetch-Site: cross-site`) is refused: a web
//!   page cannot create, list or cancel tasks (CSRF).
//! - JSON-RPC must be `Content-Type: application/json`: a browser sends that
//!   only after a CORS preflight, which this server never grants, so the
//!   "simple" `text/plain` and form POSTs a page can send blind are refused.

use super::rpc::{self, RpcError};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Json, Response};
use serde_json::Value;
use std::collections::BTreeSet;
use std::net::SocketAddr;

/// The names and origins this server answers to.
pub struct Guard {
    /// Lowercase host names (IPv6 literals in brackets), without port.
    hosts: BTreeSet<String>,
    port: u16,
}

pub use crate::allowed_host::check_allowed_host;
use crate::allowed_host::ip_name;

impl Guard {
    /// The bound address, the loopback names, and the operator's names.
    pub fn new(local: SocketAddr, allowed: &[String]) -> Guard {
        let mut hosts: BTreeSet<String> = ["localhost", "127.0.0.1", "[::1]"].into_iter().map(String::from).collect();
        if !local.ip().is_unspecified() {
            hosts.insert(ip_name(local.ip()));
        }
        hosts.extend(allowed.iter().cloned());
        Guard { hosts, port: local.port() }
    }

    /// The host part of a `Host` header value (lowercase, port removed).
    fn host_name(value: &str) -> Option<String> {
        let v = value.trim().to_ascii_lowercase();
        if v.starts_with('[') {
            let end = v.find(']')?;
            let rest = &v[end + 1..];
            if !(rest.is_empty() || rest.strip_prefix(':').is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))) {
                return None;
            }
            return Some(v[..=end].to_string());
        }
        match v.rsplit_once(':') {
            Some((h, p)) if p.bytes().all(|b| b.is_ascii_digit()) => Some(h.to_string()),
            Some(_) => None,
            None => Some(v),
        }
    }

    fn host_ok(&self, headers: &HeaderMap) -> bool {
        let Some(v) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else { return false };
        Self::host_name(v).is_some_and(|h| self.hosts.contains(&h))
    }

    /// Our own origin: `http://NAME:PORT` for a name we answer to.
    fn origin_ok(&self, origin: &str) -> bool {
        let o = origin.trim().to_ascii_lowercase();
        let Some(rest) = o.strip_prefix("http://") else { return false };
        let (name, port) = match Self::host_name(rest) {
            Some(n) => {
                let port = rest[n.len()..].strip_prefix(':').map(str::parse::<u16>);
                (n, port)
            }
            None => return false,
        };
        let port_ok = match port {
            None => self.port == 80,
            Some(Ok(p)) => p == self.port,
            Some(Err(_)) => false,
        };
        port_ok && self.hosts.contains(&name)
    }

    /// The refusal of a request that is not for this server or comes from a
    /// foreign browser origin (HTTP 403 with a JSON-RPC error body), if any.
    pub fn check(&self, headers: &HeaderMap) -> Option<Response> {
        if !self.host_ok(headers) {
            return Some(refusal(
                StatusCode::FORBIDDEN,
                "Forbidden: the Host header does not name this server (start it with --allow-host NAME to serve that name)",
            ));
        }
        let cross_site = headers
            .get("sec-fetch-site")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("cross-site") || v.eq_ignore_ascii_case("same-site"));
        let foreign = match headers.get(header::ORIGIN) {
            None => false,
            Some(o) => !o.to_str().is_ok_and(|o| self.origin_ok(o)),
        };
        if cross_site || foreign {
            return Some(refusal(
                StatusCode::FORBIDDEN,
                "Forbidden: cross-origin requests are not served (this server grants no CORS)",
            ));
        }
        None
    }
}

/// JSON-RPC needs `Content-Type: application/json` (parameters allowed):
/// the refusal (HTTP 415) of any other, if it is one.
pub fn check_content_type(headers: &HeaderMap) -> Option<Response> {
    let ok = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json")));
    (!ok).then(|| {
        refusal(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Unsupported Media Type: JSON-RPC requests must be sent with 'Content-Type: application/json'",
        )
    })
}

/// An HTTP error whose body is a JSON-RPC Invalid Request error.
pub fn refusal(status: StatusCode, message: &str) -> Response {
    let body = rpc::failure(&Value::Null, &RpcError::new(rpc::INVALID_REQUEST, message));
    let mut r = Json(body).into_response();
    *r.status_mut() = status;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> Guard {
        Guard::new("127.0.0.1:8472".parse().unwrap(), &["agents.example".to_string()])
    }

    #[test]
    fn origins() {
        let g = guard();
        assert!(g.origin_ok("http://127.0.0.1:8472"));
        assert!(g.origin_ok("http://localhost:8472"));
        assert!(g.origin_ok("http://agents.example:8472"));
        assert!(!g.origin_ok("http://localhost:3000"));
        assert!(!g.origin_ok("https://127.0.0.1:8472"));
        assert!(!g.origin_ok("null"));
        assert!(!g.origin_ok("http://evil.example:8472"));
        assert!(!g.origin_ok("http://127.0.0.1"));
    }

    #[test]
    fn host_names() {
        assert_eq!(Guard::host_name("LocalHost:80").as_deref(), Some("localhost"));
        assert_eq!(Guard::host_name("[::1]:8472").as_deref(), Some("[::1]"));
        assert_eq!(Guard::host_name("[::1]x"), None);
        assert_eq!(Guard::host_name("a:b"), None);
        assert_eq!(check_allowed_host("Agents.Example").unwrap(), "agents.example");
        assert_eq!(check_allowed_host("::1").unwrap(), "[::1]");
        assert!(check_allowed_host("a.example:80").is_err());
        assert!(check_allowed_host("").is_err());
    }
}
