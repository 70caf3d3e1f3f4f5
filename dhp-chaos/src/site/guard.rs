//! Who `--dashboard` answers: a request head read whole before a deadline,
//! a Host (and Origin, when sent) naming a loopback address or an
//! `--allow-host` name (DNS rebinding), and the dashboard's token — as
//! `Authorization: Bearer T`, or the session cookie `/login?token=T` sets.
//! The run directory holds the store, the process logs and the history: a
//! page of another origin, or another local user, reads none of it.

use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The whole request head (request line and headers) must arrive within
/// this long: a client trickling bytes does not keep a connection slot.
pub const HEAD_DEADLINE: Duration = Duration::from_secs(5);

/// A server's connection cap within the descriptor budget: `max`, or a
/// quarter of the soft RLIMIT_NOFILE when that is lower (at least 1), so
/// `accept` never takes the harness's last descriptors.
pub fn conn_cap(max: usize) -> usize {
    cap_for(max, nofile_soft())
}

/// This process's soft RLIMIT_NOFILE, from `/proc/self/limits` (1024 when
/// it cannot be read).
pub fn nofile_soft() -> u64 {
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|t| {
            let l = t.lines().find(|l| l.starts_with("Max open files"))?;
            l.trim_start_matches("Max open files").split_whitespace().next()?.parse().ok()
        })
        .unwrap_or(1024)
}

/// [`conn_cap`] under a soft RLIMIT_NOFILE of `soft`.
pub fn cap_for(max: usize, soft: u64) -> usize {
    usize::try_from(soft / 4).unwrap_or(max).clamp(1, max)
}
/// The longest request head read.
pub const MAX_HEAD: usize = 16 * 1024;
/// The session cookie's name.
pub const COOKIE: &str = "dhpchaos_session";

/// A request head.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Head {
    /// `GET`, `HEAD`, …
    pub method: String,
    /// The request target as sent (path and query).
    pub target: String,
    /// Headers, names lowercased, in order.
    pub headers: Vec<(String, String)>,
}

impl Head {
    /// The first header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// Read a request head from `s` by [`HEAD_DEADLINE`]: `None` when it did
/// not come whole in time, or was too long or not HTTP.
pub fn read_head(s: &TcpStream) -> Option<Head> {
    let deadline = Instant::now() + HEAD_DEADLINE;
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let mut r = s;
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && !buf.windows(2).any(|w| w == b"\n\n") {
        let left = deadline.checked_duration_since(Instant::now()).filter(|d| !d.is_zero())?;
        s.set_read_timeout(Some(left)).ok()?;
        let n = r.read(&mut chunk).ok()?;
        if n == 0 || buf.len() + n > MAX_HEAD {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&buf);
    let mut lines = text.lines();
    let mut first = lines.next()?.split_whitespace();
    let (method, target) = (first.next()?.to_string(), first.next()?.to_string());
    let headers = lines
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Some(Head { method, target, headers })
}

/// The names the dashboard answers to, and its secrets.
#[derive(Debug, Clone)]
pub struct Guard {
    /// Lowercased host names (no port): loopback names and `--allow-host`.
    allowed: Vec<String>,
    /// The token ([`new_secret`] when none was given).
    token: String,
    /// The session cookie's value: random, never the token.
    session: String,
}

/// Check an `--allow-host` value: a DNS name or an IP literal, no port;
/// returns it lowercased (an IPv6 literal in brackets).
pub fn check_host(name: &str) -> Result<String, String> {
    let n = name.trim().to_ascii_lowercase();
    if let Ok(ip) = n.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>() {
        return Ok(match ip {
            std::net::IpAddr::V4(v4) => v4.to_string(),
            std::net::IpAddr::V6(v6) => format!("[{v6}]"),
        });
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if !n.is_empty() && n.len() <= 253 && n.split('.').all(label_ok) {
        Ok(n)
    } else {
        Err(format!("--allow-host {name:?} is not a host name or IP address (give it without a port)"))
    }
}

/// 128 random bits, hex.
pub fn new_secret() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// Constant-time equality (a timing side channel must not spell the token).
fn ct_eq(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The host part of a Host header or an Origin's authority, lowercased,
/// without the port (`[::1]:80` → `[::1]`).
fn host_of(authority: &str) -> String {
    let a = authority.trim().to_ascii_lowercase();
    if a.starts_with('[') {
        return a.split_once(']').map(|(h, _)| format!("{h}]")).unwrap_or(a);
    }
    a.split(':').next().unwrap_or("").to_string()
}

/// What a request may see.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Serve it.
    Allowed,
    /// `/login` with the right token: set the session cookie and redirect.
    Login,
    /// 403: a Host or Origin the dashboard does not answer to.
    WrongHost,
    /// 401: no valid token or session.
    Unauthorized,
}

impl Guard {
    /// Loopback names plus `extra` (`--allow-host`, already checked);
    /// `token`: the operator's, or `None` for a fresh random one.
    pub fn new(extra: &[String], token: Option<String>) -> Guard {
        let mut allowed: Vec<String> = ["localhost", "127.0.0.1", "[::1]"].map(String::from).to_vec();
        allowed.extend(extra.iter().map(|h| h.to_ascii_lowercase()));
        Guard { allowed, token: token.filter(|t| !t.is_empty()).unwrap_or_else(new_secret), session: new_secret() }
    }

    /// The token a browser logs in with.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// `Set-Cookie` value for a login.
    pub fn set_cookie(&self) -> String {
        format!("{COOKIE}={}; Path=/; HttpOnly; SameSite=Strict", self.session)
    }

    /// Judge a request head.
    pub fn judge(&self, h: &Head) -> Verdict {
        let host_ok = h.header("host").is_some_and(|v| self.allowed.contains(&host_of(v)));
        let origin_ok = match h.header("origin") {
            None => true,
            Some(o) => o.strip_prefix("http://").is_some_and(|a| self.allowed.contains(&host_of(a))),
        };
        if !host_ok || !origin_ok {
            return Verdict::WrongHost;
        }
        let (path, query) = h.target.split_once('?').unwrap_or((h.target.as_str(), ""));
        if path == "/login" {
            let given = query.split('&').find_map(|kv| kv.strip_prefix("token="));
            return if given.is_some_and(|t| ct_eq(t, &self.token)) { Verdict::Login } else { Verdict::Unauthorized };
        }
        let bearer = h
            .header("authorization")
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|t| ct_eq(t.trim(), &self.token));
        let cookie = h
            .header("cookie")
            .into_iter()
            .flat_map(|c| c.split(';'))
            .filter_map(|kv| kv.trim().strip_prefix(COOKIE).and_then(|r| r.strip_prefix('=')))
            .any(|v| ct_eq(v, &self.session));
        if bearer || cookie {
            Verdict::Allowed
        } else {
            Verdict::Unauthorized
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_is_a_quarter_of_a_low_descriptor_limit() {
        assert_eq!(cap_for(64, 1 << 20), 64);
        assert_eq!(cap_for(64, 128), 32);
        assert_eq!(cap_for(32, 64), 16);
        assert_eq!(cap_for(32, 0), 1);
        assert!(conn_cap(64) <= 64 && conn_cap(64) as u64 <= (nofile_soft() / 4).max(1));
    }

    fn head(target: &str, headers: &[(&str, &str)]) -> Head {
        Head {
            method: "GET".into(),
            target: target.into(),
            headers: headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        }
    }

    #[test]
    fn host_origin_and_token_are_each_required() {
        let g = Guard::new(&["dash.internal".into()], Some("T0KEN".into()));
        let bearer = ("authorization", "Bearer T0KEN");
        assert_eq!(g.judge(&head("/", &[("host", "127.0.0.1:8080"), bearer])), Verdict::Allowed);
        assert_eq!(g.judge(&head("/", &[("host", "[::1]:1"), bearer])), Verdict::Allowed);
        assert_eq!(g.judge(&head("/", &[("host", "dash.internal"), bearer])), Verdict::Allowed);
        // DNS rebinding: the attacker's name on our address
        assert_eq!(g.judge(&head("/round-0000/", &[("host", "rebind.attacker.test"), bearer])), Verdict::WrongHost);
        assert_eq!(g.judge(&head("/", &[bearer])), Verdict::WrongHost);
        let o = ("origin", "http://attacker.test");
        assert_eq!(g.judge(&head("/", &[("host", "localhost:1"), o, bearer])), Verdict::WrongHost);
        let o = ("origin", "http://localhost:1");
        assert_eq!(g.judge(&head("/", &[("host", "localhost:1"), o, bearer])), Verdict::Allowed);
        // no token, a wrong one
        assert_eq!(g.judge(&head("/", &[("host", "localhost:1")])), Verdict::Unauthorized);
        let wrong = ("authorization", "Bearer T0KEM");
        assert_eq!(g.judge(&head("/", &[("host", "localhost:1"), wrong])), Verdict::Unauthorized);
        // login, then the cookie
        assert_eq!(g.judge(&head("/login?token=T0KEN", &[("host", "localhost:1")])), Verdict::Login);
        assert_eq!(g.judge(&head("/login?token=x", &[("host", "localhost:1")])), Verdict::Unauthorized);
        let c = g.set_cookie();
        let cookie = c.split(';').next().unwrap().to_string();
        assert_eq!(g.judge(&head("/", &[("host", "localhost:1"), ("cookie", &cookie)])), Verdict::Allowed);
        assert_eq!(
            g.judge(&head("/", &[("host", "localhost:1"), ("cookie", "dhpchaos_session=T0KEN")])),
            Verdict::Unauthorized
        );
        // a token of its own when none is given
        assert_eq!(Guard::new(&[], None).token().len(), 32);
    }

    #[test]
    fn a_trickled_head_is_cut_at_the_deadline() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let mut c = TcpStream::connect(addr).unwrap();
            for b in b"GET / HTTP/1.1\r\nHost: localhost\r\n" {
                if std::io::Write::write_all(&mut c, &[*b]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(300));
            }
        });
        let (s, _) = l.accept().unwrap();
        let t0 = Instant::now();
        assert_eq!(read_head(&s), None);
        let took = t0.elapsed();
        assert!(
            took >= HEAD_DEADLINE - Duration::from_millis(100) && took < HEAD_DEADLINE + Duration::from_secs(2),
            "{took:?}"
        );
        drop(s);
        t.join().unwrap();
    }
}
