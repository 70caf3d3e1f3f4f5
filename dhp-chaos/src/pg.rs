//! PostgreSQL rounds: the throwaway server a `--store postgres` run owns
//! ([`crate::db::single`], the layout of `scripts/pg.sh`), the harness's
//! own client (no dhp-core store code: the checker must not trust what it
//! checks), and the end-of-round JSON export of the store that `analyze`
//! re-checks once the cluster is gone.

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

/// Start a throwaway server this run owns ([`crate::db::single::setup`]):
/// stopped and removed when the returned value is dropped, on a signal, or
/// by its watcher should this process die without either.
pub fn start_owned() -> Result<crate::db::Owned> {
    Ok(crate::db::single::setup()?)
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

/// How long [`export_to`] keeps trying to reach a writable primary.
const EXPORT_PATIENCE: Duration = Duration::from_secs(90);

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

/// Export the round's store to `path`, retrying while the server restarts
/// or a failover manager has yet to promote a primary (pg_auto_failover
/// can take longer than 15 s after a host death at the round's end).
pub fn export_to(url: &str, schema: &str, path: &Path) -> Result<()> {
    let mut last = None;
    let until = std::time::Instant::now() + EXPORT_PATIENCE;
    while last.is_none() || std::time::Instant::now() < until {
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
