//! Who `--dashboard` answers: a Host (and Origin, when sent) naming a loopback address or an
//! `--allow-host` name (DNS rebinding), and the dashboard's token — as
//! `Authorization: Bearer T`, or the session cookie `/login?token=T` sets.
//! The run directory holds the store, the process logs and the history: a
//! page of another origin, or another local user, reads none of it.

/// The session cookie's name.
pub const COOKIE: &str = "dhpchaos_session";

/// A request head (as the HTTP stack parsed it).
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
}
