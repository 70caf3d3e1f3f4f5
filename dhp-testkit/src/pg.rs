//! PostgreSQL for the tests: `DHP_TEST_PG_URL` when set (an existing
//! server), else one throwaway cluster per test binary, started by
//! `scripts/pg.sh` and torn down when the binary exits. If PostgreSQL cannot
//! be started the test fails: it never skips.
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

fn pg_sh() -> PathBuf {
    crate::checkout().join("scripts/pg.sh")
}

/// A cluster started by scripts/pg.sh: `(data dir, URL)`.
pub struct Cluster {
    pub dir: String,
    pub url: String,
}

impl Cluster {
    /// Start a private cluster (stopped and removed on drop, or when this
    /// process exits).
    pub fn start() -> Cluster {
        Self::start_with(&[])
    }

    /// A private cluster that also speaks TLS (`pg.sh start --tls`): its CA
    /// is [`Cluster::ca`], an unrelated CA [`Cluster::other_ca`].
    pub fn start_tls() -> Cluster {
        Self::start_with(&["--tls"])
    }

    pub fn ca(&self) -> String {
        format!("{}/tls/ca.crt", self.dir)
    }

    pub fn other_ca(&self) -> String {
        format!("{}/tls/other-ca.crt", self.dir)
    }

    fn start_with(extra: &[&str]) -> Cluster {
        let out = Command::new("bash")
            .arg(pg_sh())
            .arg("start")
            .args(extra)
            .args(["--watch", &std::process::id().to_string()])
            .output()
            .expect("run scripts/pg.sh");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "scripts/pg.sh start failed ({}): {}{}",
            out.status,
            stdout,
            String::from_utf8_lossy(&out.stderr)
        );
        let last = stdout.lines().last().unwrap_or_default();
        let (dir, url) = last.split_once(' ').unwrap_or_else(|| panic!("pg.sh printed no `DIR URL`: {stdout:?}"));
        Cluster { dir: dir.to_string(), url: url.to_string() }
    }

    fn run(&self, cmd: &str) {
        let st = Command::new("bash").arg(pg_sh()).args([cmd, &self.dir]).status().expect("run scripts/pg.sh");
        assert!(st.success(), "scripts/pg.sh {cmd} failed: {st}");
    }

    /// `pg_ctl stop -m immediate`: the database crashes.
    pub fn crash(&self) {
        self.run("crash");
    }

    /// Start it again after [`Cluster::crash`].
    pub fn restart(&self) {
        self.run("restart");
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash").arg(pg_sh()).args(["stop", &self.dir]).status();
    }
}

static SHARED: OnceLock<(Option<Cluster>, String)> = OnceLock::new();

/// The server URL every test of this binary shares.
pub fn base_url() -> String {
    let (_, url) = SHARED.get_or_init(|| match std::env::var("DHP_TEST_PG_URL") {
        Ok(u) if !u.is_empty() => (None, u),
        _ => {
            let c = Cluster::start();
            let url = c.url.clone();
            // Leaked on purpose: statics are not dropped; the watcher stops
            // the cluster when this process exits.
            (Some(c), url)
        }
    });
    url.clone()
}

/// `url` with `schema=NAME` added.
pub fn with_schema(url: &str, schema: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}schema={schema}")
}

/// A store URL in a schema no other test uses.
pub fn fresh_url(tag: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    with_schema(&base_url(), &format!("t_{tag}_{}_{n}_{nanos}", std::process::id()))
}

/// Run SQL on the server (outside any DHP store) and return the first
/// column of each row as text.
pub fn sql(url: &str, query: &str) -> Vec<Option<String>> {
    let loc = match dhp_core::store::StoreLocation::parse(url).expect("a postgres URL") {
        dhp_core::store::StoreLocation::Postgres(p) => p,
        other => panic!("not a postgres URL: {other:?}"),
    };
    let mut c = postgres::Client::connect(&loc.url, postgres::NoTls).expect("connect for raw SQL");
    c.simple_query(query)
        .expect("raw SQL")
        .into_iter()
        .filter_map(|m| match m {
            postgres::SimpleQueryMessage::Row(r) => Some(r.get(0).map(str::to_string)),
            _ => None,
        })
        .collect()
}
