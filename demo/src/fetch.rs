//! The page fetch: a real HTTP client (ureq) against the Wikipedia REST
//! API summary endpoint or the local mirror, plain http or https.

use crate::mirror::SUMMARY_PREFIX;
use crate::titles;
use std::io::Read;
use std::time::{Duration, Instant};

/// What the demo sends as User-Agent: it names the demo to Wikimedia, whose
/// policy also asks for a contact; add yours here before fetching at scale.
pub const USER_AGENT: &str =
    "dhp-rs-kill-demo/0.1 (Durable Handoff Protocol kill demo, fetches at most 100 pages per run)";

/// Largest body the demo accepts for one page.
pub const MAX_BODY: u64 = 4 * 1024 * 1024;

/// An HTTP client with the demo's timeouts.
pub struct Fetcher {
    agent: ureq::Agent,
    base: String,
}

/// One successful fetch.
#[derive(Debug, Clone)]
pub struct Page {
    pub url: String,
    pub status: u16,
    pub body: Vec<u8>,
    pub elapsed: Duration,
}

impl Fetcher {
    /// `base` is e.g. `https://en.wikipedia.org` or `http://127.0.0.1:PORT`.
    pub fn new(base: &str, timeout: Duration) -> Fetcher {
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(Duration::from_secs(10).min(timeout))
            .timeout(timeout)
            .user_agent(USER_AGENT)
            .redirects(5)
            .build();
        Fetcher { agent, base: base.trim_end_matches('/').to_string() }
    }

    /// The summary URL of `title`.
    pub fn url(&self, title: &str) -> String {
        summary_url(&self.base, title)
    }

    /// GET the summary of `title`. Non-2xx statuses are errors.
    pub fn fetch(&self, title: &str) -> anyhow::Result<Page> {
        let url = self.url(title);
        let started = Instant::now();
        let resp = match self.agent.get(&url).set("Accept", "application/json").call() {
            Ok(r) => r,
            Err(ureq::Error::Status(code, r)) => {
                anyhow::bail!("GET {url}: HTTP {code} {}", r.status_text())
            }
            Err(e) => anyhow::bail!("{e}"),
        };
        let status = resp.status();
        let mut body = Vec::new();
        resp.into_reader().take(MAX_BODY + 1).read_to_end(&mut body)?;
        anyhow::ensure!(body.len() as u64 <= MAX_BODY, "GET {url}: body larger than {MAX_BODY} bytes");
        Ok(Page { url, status, body, elapsed: started.elapsed() })
    }
}

/// `{base}/api/rest_v1/page/summary/{encoded title}`.
pub fn summary_url(base: &str, title: &str) -> String {
    format!("{}{SUMMARY_PREFIX}{}", base.trim_end_matches('/'), titles::encode_title(title))
}
