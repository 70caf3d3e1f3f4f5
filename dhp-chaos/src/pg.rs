//! PostgreSQL rounds: the throwaway cluster a `--store postgres` run owns
//! (started and stopped with `scripts/pg.sh`, like the tests), the harness's
//! own client (no dhp-core store code: the checker must not trust what it
//! checks), and the end-of-round JSON export of the store that `analyze`
//! re-checks once the cluster is gone.

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

/// A cluster started for this run; stopped (and its directory removed) on drop.
#[derive(Debug)]
pub struct OwnedCluster {
    script: PathBuf,
    /// The cluster's data directory.
    pub data_dir: PathBuf,
    /// The server's URL as `scripts/pg.sh` prints it (`postgres://…`, with the password).
    pub url: String,
}

impl OwnedCluster {
    /// `scripts/pg.sh start --watch <this pid>`: the script stops the
    /// cluster itself should this process die without dropping it.
    pub fn start() -> Result<OwnedCluster> {
        let script = pg_script()?;
        let out = std::process::Command::new("bash")
            .arg(&script)
            .args(["start", "--watch", &std::process::id().to_string()])
            .stderr(std::process::Stdio::inherit())
            .output()
            .with_context(|| format!("running {}", script.display()))?;
        if !out.status.success() {
            bail!("{} start failed ({})", script.display(), out.status);
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let last = text.lines().last().unwrap_or("").trim();
        let Some((dir, url)) = last.split_once(' ') else {
            bail!("{} start printed {last:?}, not `DIR URL`", script.display());
        };
        let c = OwnedCluster { script, data_dir: PathBuf::from(dir), url: url.to_string() };
        // stopped on a signal too (if teardown began meanwhile: stopped now, by the drop)
        crate::teardown::guarded(|r| {
            r.clusters.insert((c.script.clone(), c.data_dir.clone()));
            Ok(())
        })?;
        Ok(c)
    }
}

impl Drop for OwnedCluster {
    fn drop(&mut self) {
        stop_cluster(&self.script, &self.data_dir);
    }
}

/// scripts/pg.sh, as this program was built with it: written once into
/// `$XDG_CACHE_HOME/dhp-rs/` (default `~/.cache/dhp-rs/`, else the temporary
/// directory) under a name that carries a hash of its text, so an installed
/// `dhp-chaos` needs no checkout to start and stop its throwaway clusters.
pub fn pg_script() -> Result<PathBuf> {
    cached_script("pg", include_str!("../../scripts/pg.sh"))
}

/// A script built into this program (`stem`, its `text`), written once into
/// the cache directory under `STEM-HASH.sh`, so an installed `dhp-chaos`
/// needs no checkout (scripts/pg.sh, scripts/pg-cluster.sh).
pub(crate) fn cached_script(stem: &str, text: &str) -> Result<PathBuf> {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    let dir = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|d| !d.is_empty()).map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("dhp-rs");
    let path = dir.join(format!("{stem}-{:016x}.sh", h.finish()));
    if std::fs::read_to_string(&path).is_ok_and(|t| t == text) {
        return Ok(path);
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    // written aside and renamed: a concurrent run never reads half a script
    let tmp = dir.join(format!(".{stem}-{}.sh", std::process::id()));
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// `SCRIPT stop DIR` for a cluster this run owns, and forget it in the
/// teardown registry (the drop of [`OwnedCluster`] and of the replicated one).
pub(crate) fn stop_cluster(script: &Path, dir: &Path) {
    let _ = std::process::Command::new("bash")
        .arg(script)
        .arg("stop")
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .status();
    let key = (script.to_path_buf(), dir.to_path_buf());
    crate::teardown::forget(|r| {
        r.clusters.remove(&key);
    });
}

/// `postgres://…` or `postgresql://…`, without a `schema=` (each round gets its own).
pub fn check_url(url: &str) -> Result<()> {
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        bail!("--store wants sqlite, postgres or a postgres:// URL, not {:?}", mask(url));
    }
    if url.split_once('?').is_some_and(|(_, q)| q.split('&').any(|kv| kv.starts_with("schema="))) {
        bail!("--store {}: leave out schema= (every round gets a schema of its own)", mask(url));
    }
    Ok(())
}

/// `user:***@host`: passwords never reach a message or a file.
pub fn mask(url: &str) -> String {
    dhp_secrets::mask_secrets(url)
}

/// The harness's own connection, with `search_path` set to the round's schema.
pub fn connect(url: &str, schema: &str, timeout: Duration) -> Result<postgres::Client> {
    let (bare, passfile) = dhp_secrets::passfile::split_passfile(url);
    let mut cfg = postgres::Config::from_str(&bare).with_context(|| format!("parsing {}", mask(url)))?;
    // the password as `dhp` finds it: the URL's, else PGPASSWORD, else the password file
    dhp_secrets::passfile::fill_password(&mut cfg, passfile.as_deref());
    if cfg.get_connect_timeout().is_none() {
        cfg.connect_timeout(timeout);
    }
    cfg.application_name("dhp-chaos");
    let mut c = cfg.connect(postgres::NoTls).with_context(|| format!("connecting to {}", mask(url)))?;
    c.batch_execute(&format!("SET search_path TO \"{schema}\""))?;
    Ok(c)
}

/// The tables the checker reads, one object per table, rows as the loader
/// reads them (`check::load::load_export` reads this back).
pub fn export(c: &mut postgres::Client) -> Result<Value> {
    let handoffs: Vec<Value> = c
        .query("SELECT hid, envelope_json FROM handoffs ORDER BY hid", &[])?
        .iter()
        .map(|r| json!({"hid": r.get::<_, String>(0), "envelope_json": r.get::<_, String>(1)}))
        .collect();
    let checkpoints: Vec<Value> = c
        .query("SELECT hid, seq, state_json, state_hash FROM checkpoints ORDER BY hid, seq", &[])?
        .iter()
        .map(|r| {
            json!({"hid": r.get::<_, String>(0), "seq": r.get::<_, i64>(1),
                   "state_json": r.get::<_, String>(2), "state_hash": r.get::<_, String>(3)})
        })
        .collect();
    let ownership: Vec<Value> = c
        .query("SELECT hid, holder, fence FROM ownership ORDER BY hid", &[])?
        .iter()
        .map(|r| json!({"hid": r.get::<_, String>(0), "holder": r.get::<_, String>(1), "fence": r.get::<_, i64>(2)}))
        .collect();
    let mut v = json!({"engine": "postgres", "handoffs": handoffs, "checkpoints": checkpoints, "ownership": ownership});
    // the harness's record of the store's commit order (`crate::audit`), when installed
    if let Some(audit) = crate::audit::export_pg(c)? {
        v["audit"] = audit;
    }
    Ok(v)
}

/// Export the round's store to `path` (retrying while the server restarts).
pub fn export_to(url: &str, schema: &str, path: &Path) -> Result<()> {
    let mut last = None;
    for _ in 0..30 {
        match connect(url, schema, Duration::from_secs(2)).and_then(|mut c| export(&mut c)) {
            Ok(v) => {
                std::fs::write(path, serde_json::to_vec_pretty(&v)?)
                    .with_context(|| format!("writing {}", path.display()))?;
                return Ok(());
            }
            Err(e) => last = Some(e),
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    Err(last.unwrap_or_else(|| anyhow::anyhow!("no attempt made")).context("exporting the PostgreSQL store"))
}

/// The server a `postgres://…` URL names, as one socket address (the
/// upstream of the workers' link proxy, `db-link` faults). Refused for what
/// a proxy cannot stand in for: a Unix socket, several hosts, or a host or
/// port given as a query parameter (`host=`, `hostaddr=`, `port=`).
pub fn server_addr(url: &str) -> Result<std::net::SocketAddr> {
    use std::net::ToSocketAddrs;
    let (_, query) = url.split_once('?').unwrap_or((url, ""));
    if let Some(kv) = query.split('&').find(|kv| ["host=", "hostaddr=", "port="].iter().any(|p| kv.starts_with(p))) {
        let key = kv.split('=').next().unwrap_or(kv);
        bail!("db-link faults rewrite the URL's host:port; {} gives {key}= as a parameter", mask(url));
    }
    let cfg = postgres::Config::from_str(url).with_context(|| format!("parsing {}", mask(url)))?;
    let host = match cfg.get_hosts() {
        [postgres::config::Host::Tcp(h)] => h.clone(),
        [postgres::config::Host::Unix(_)] => {
            bail!("db-link faults need a TCP server; {} names a Unix socket", mask(url))
        }
        [] => "localhost".to_string(),
        _ => bail!("db-link faults proxy one server; {} names several hosts", mask(url)),
    };
    let port = match cfg.get_ports() {
        [] => 5432,
        [p] => *p,
        _ => bail!("db-link faults proxy one server; {} names several ports", mask(url)),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
    let addrs: Vec<std::net::SocketAddr> =
        (host.as_str(), port).to_socket_addrs().with_context(|| format!("resolving {host}:{port}"))?.collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| addrs.first())
        .copied()
        .with_context(|| format!("{host}:{port} resolves to no address"))
}

/// `url` with its `host[:port]` replaced by `via` — credentials, database
/// and parameters (`schema=` included) kept — so a worker reaches the
/// server through the link proxy. [`server_addr`] must accept `url` first.
pub fn via_proxy(url: &str, via: std::net::SocketAddr) -> Result<String> {
    let start = url.find("://").map(|i| i + 3).with_context(|| format!("{} is not a URL", mask(url)))?;
    let rest = &url[start..];
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let host_at = authority.rfind('@').map_or(0, |i| i + 1);
    if authority[host_at..].contains(',') {
        bail!("db-link faults proxy one server; {} names several hosts", mask(url));
    }
    Ok(format!("{}{}{via}{}", &url[..start], &authority[..host_at], &rest[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn via_proxy_keeps_credentials_database_and_schema() {
        let via: std::net::SocketAddr = "127.0.0.1:40001".parse().unwrap();
        assert_eq!(
            via_proxy("postgres://u:p%40w@127.0.0.1:5433/dhp?schema=chaos_1_0", via).unwrap(),
            "postgres://u:p%40w@127.0.0.1:40001/dhp?schema=chaos_1_0"
        );
        assert_eq!(via_proxy("postgresql://db.example/x", via).unwrap(), "postgresql://127.0.0.1:40001/x");
        assert_eq!(
            via_proxy("postgres://u@[::1]:5432?sslmode=disable", via).unwrap(),
            "postgres://u@127.0.0.1:40001?sslmode=disable"
        );
        assert!(via_proxy("postgres://u@h1:5432,h2:5432/db", via).is_err());
    }

    #[test]
    fn server_addr_takes_one_tcp_server_only() {
        assert_eq!(server_addr("postgres://u:pw@127.0.0.1:5433/dhp").unwrap().to_string(), "127.0.0.1:5433");
        assert_eq!(server_addr("postgres://u@127.0.0.1/dhp").unwrap().port(), 5432);
        for bad in [
            "postgres://u@%2Ftmp%2Fsock/dhp",
            "postgres://u@127.0.0.1:1,127.0.0.1:2/dhp",
            "postgres://u@127.0.0.1/dhp?host=/tmp",
            "postgres://u@127.0.0.1/dhp?port=5999",
        ] {
            let e = server_addr(bad).expect_err(bad).to_string();
            assert!(e.contains("db-link") || e.contains("parsing"), "{bad}: {e}");
            assert!(!e.contains("pw"), "{e}");
        }
    }
}
