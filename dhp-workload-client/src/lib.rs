//! The client of a harness's workload service (`dhp work --workload URL`,
//! `DHP_WORKLOAD_URL`): get each census chunk's count and sum from the
//! service instead of sieving it, and carry the service's stamp in the
//! checkpoint (dhp-chaos/CONTRACT.md §2.1). One HTTP GET per chunk, with
//! the project's one HTTP client (ureq). A crate of its own, beside
//! dhp-workload: the judge (dhp-chaos) links dhp-workload and no HTTP
//! client, and one crate built with two feature sets would be compiled
//! twice by the README's commands.

use dhp_workload::{Error, Result, ServiceFailure};
use serde_json::Value;
use std::io::Read;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Longest wait for the service to connect or answer.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Largest answer read.
const MAX_ANSWER: u64 = 64 * 1024;

/// The variable holding this process's credential for the service.
pub use dhp_workload::client::CREDENTIAL_ENV;

/// A workload service at `http://HOST:PORT`.
#[derive(Clone)]
pub struct Workload {
    addr: SocketAddr,
    host: String,
    /// One request per connection (the service closes each).
    agent: ureq::Agent,
    /// This process's credential ([`CREDENTIAL_ENV`]), if it was given one.
    credential: Option<String>,
}

impl std::fmt::Debug for Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // the credential is a secret: never printed
        f.debug_struct("Workload").field("host", &self.host).field("credential", &self.credential.is_some()).finish()
    }
}

/// One served chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// Primes in the chunk.
    pub count: u64,
    /// Their sum.
    pub sum: u64,
    /// The service's token for this answer: the checkpoint carries it as `stamp`.
    pub stamp: String,
}

impl Workload {
    /// Parse `http://HOST:PORT[/]`; refused (kind Address) otherwise.
    pub fn parse(url: &str) -> Result<Workload> {
        let bad = |why: &str| Error::Service {
            failure: ServiceFailure::Address,
            detail: format!("{url:?}: {why}"),
            source: None,
        };
        let rest = url.strip_prefix("http://").ok_or_else(|| bad("want http://HOST:PORT"))?;
        let host = rest.strip_suffix('/').unwrap_or(rest);
        if host.is_empty() || host.contains('/') {
            return Err(bad("want http://HOST:PORT with no path"));
        }
        let addr = host
            .to_socket_addrs()
            .map_err(|e| Error::Service {
                failure: ServiceFailure::Address,
                detail: format!("{url:?}"),
                source: Some(e),
            })?
            .next()
            .ok_or_else(|| bad("resolves to no address"))?;
        // a value that could break the request head is no credential
        let credential = std::env::var(CREDENTIAL_ENV)
            .ok()
            .filter(|c| !c.is_empty() && c.len() <= 256 && c.bytes().all(|b| b.is_ascii_graphic()));
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(TIMEOUT)
            .timeout_read(TIMEOUT)
            .timeout_write(TIMEOUT)
            .redirects(0)
            .build();
        Ok(Workload { addr, host: host.to_string(), agent, credential })
    }

    /// Connect once and hang up: the service is there (before a worker
    /// claims anything, so one that cannot be served leaves the handoff pending).
    pub fn reach(&self) -> Result<()> {
        TcpStream::connect_timeout(&self.addr, TIMEOUT).map(drop).map_err(|e| Error::Service {
            failure: ServiceFailure::Unreachable,
            detail: format!("{}: {e}", self.host),
            source: Some(e),
        })
    }

    /// The chunk `[n, end)` of `hid`, asked as `holder` under `fence`.
    pub fn chunk(&self, hid: &str, n: u64, end: u64, holder: &str, fence: i64) -> Result<Chunk> {
        let what = self.host.clone();
        let io = |e: std::io::Error| Error::Service {
            failure: ServiceFailure::Unreachable,
            detail: format!("{what}: {e}"),
            source: Some(e),
        };
        // hid and holder are validated ids (hex, and the id alphabet of §1.2): no escaping needed
        let url = format!("http://{}/chunk?hid={hid}&n={n}&end={end}&holder={holder}&fence={fence}", self.host);
        let mut req = self.agent.get(&url).set("Connection", "close");
        if let Some(c) = &self.credential {
            req = req.set("Authorization", &format!("Bearer {c}"));
        }
        let refused = |why: String| Error::Service {
            failure: ServiceFailure::Refused,
            detail: format!("{what}: {why}"),
            source: None,
        };
        let (status, resp) = match req.call() {
            Ok(r) => (r.status(), r),
            Err(ureq::Error::Status(code, r)) => (code, r),
            Err(ureq::Error::Transport(t)) => return Err(io(std::io::Error::other(t.to_string()))),
        };
        let mut raw = Vec::new();
        resp.into_reader().take(MAX_ANSWER).read_to_end(&mut raw).map_err(io)?;
        let v: Value = serde_json::from_slice(&raw).map_err(|_| refused(format!("answer {status} is not JSON")))?;
        if status != 200 {
            return Err(refused(format!("{status}: {}", v["error"].as_str().unwrap_or("no reason given"))));
        }
        match (v["count"].as_u64(), v["sum"].as_u64(), v["stamp"].as_str()) {
            (Some(count), Some(sum), Some(stamp)) => Ok(Chunk { count, sum, stamp: stamp.to_string() }),
            _ => Err(refused("answer lacks count, sum or stamp".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked() {
        assert!(Workload::parse("http://127.0.0.1:80").is_ok());
        assert!(Workload::parse("http://127.0.0.1:80/").is_ok());
        for bad in ["127.0.0.1:80", "https://127.0.0.1:80", "http://", "http://127.0.0.1:80/chunk", "http://nohost"] {
            let e = Workload::parse(bad).unwrap_err();
            assert!(matches!(e, Error::Service { failure: ServiceFailure::Address, .. }), "{bad}: {e}");
        }
    }
}
