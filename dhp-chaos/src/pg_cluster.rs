//! `--pg-cluster sync|async`: a replicated PostgreSQL cluster the run owns
//! (`scripts/pg-cluster.sh`): a primary, a synchronous standby and an
//! asynchronous one, three servers on 127.0.0.1 (one port each, not network
//! namespaces), streaming replication. The clients get a multi-host URL
//! with `target_session_attrs=read-write` and follow the primary.
//!
//! Failover manager: the harness itself ([`FAILOVER_MANAGER`]) — it crashes
//! and fences the primary and promotes the synchronous standby with
//! `pg_ctl promote` (`round/db_failover.rs`). No Patroni, no etcd.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What every round file and report says promotes a standby.
pub const FAILOVER_MANAGER: &str = "harness (pg_ctl promote)";

/// The replication of an owned cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replication {
    /// `synchronous_standby_names = 'FIRST 1 (…)'`: a commit is acknowledged once a standby has it.
    Sync,
    /// `synchronous_standby_names = ''`: commits are acknowledged by the primary alone.
    Async,
}

impl Replication {
    /// `sync` / `async`, as `--pg-cluster` takes it.
    pub fn parse(s: &str) -> Result<Replication> {
        match s {
            "sync" => Ok(Replication::Sync),
            "async" => Ok(Replication::Async),
            _ => bail!("--pg-cluster wants sync or async, not {s:?}"),
        }
    }

    /// The name `--pg-cluster` and round.json use.
    pub fn name(self) -> &'static str {
        match self {
            Replication::Sync => "sync",
            Replication::Async => "async",
        }
    }
}

/// A replicated cluster started for this run; stopped (its directory removed) on drop.
#[derive(Debug)]
pub struct OwnedReplicated {
    script: PathBuf,
    /// The cluster's directory (`n0/`, `n1/`, `n2/`, `roles`, `pwfile`).
    pub dir: PathBuf,
    /// The multi-host URL (`…@h:p0,h:p1,h:p2/dhp?target_session_attrs=read-write`, with the password).
    pub url: String,
    /// Its replication.
    pub replication: Replication,
}

impl OwnedReplicated {
    /// `scripts/pg-cluster.sh start [--async] --watch <this pid>`.
    pub fn start(replication: Replication) -> Result<OwnedReplicated> {
        let script = script()?;
        let mut cmd = std::process::Command::new("bash");
        cmd.arg(&script).arg("start");
        if replication == Replication::Async {
            cmd.arg("--async");
        }
        let out = cmd
            .args(["--watch", &std::process::id().to_string()])
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
        let c = OwnedReplicated { script, dir: PathBuf::from(dir), url: url.to_string(), replication };
        crate::teardown::guarded(|r| {
            r.clusters.insert((c.script.clone(), c.dir.clone()));
            Ok(())
        })?;
        Ok(c)
    }
}

impl Drop for OwnedReplicated {
    fn drop(&mut self) {
        crate::pg::stop_cluster(&self.script, &self.dir);
    }
}

/// scripts/pg-cluster.sh as built into this program, written once into the
/// cache directory beside [`crate::pg::pg_script`]'s copy.
pub fn script() -> Result<PathBuf> {
    crate::pg::cached_script("pg-cluster", include_str!("../../scripts/pg-cluster.sh"))
}

/// Is `dir` a `scripts/pg-cluster.sh` directory?
pub fn is_cluster_dir(dir: &Path) -> bool {
    dir.join("roles").is_file() && dir.join("n0/port").is_file()
}

/// The nodes by role: (primary, synchronous standby, asynchronous standby).
pub fn roles(dir: &Path) -> Result<(String, String, String)> {
    let text =
        std::fs::read_to_string(dir.join("roles")).with_context(|| format!("reading {}/roles", dir.display()))?;
    let mut w = text.split_whitespace().map(str::to_string);
    match (w.next(), w.next(), w.next()) {
        (Some(p), Some(s), Some(a)) => Ok((p, s, a)),
        _ => bail!("{}/roles is not `primary sync async`: {text:?}", dir.display()),
    }
}

/// A URL of one node alone (no `target_session_attrs`: a standby is read too).
pub fn node_url(dir: &Path, node: &str) -> Result<String> {
    let port = std::fs::read_to_string(dir.join(node).join("port"))
        .with_context(|| format!("reading {}/{node}/port", dir.display()))?;
    let pw =
        std::fs::read_to_string(dir.join("pwfile")).with_context(|| format!("reading {}/pwfile", dir.display()))?;
    Ok(format!("postgres://postgres:{}@127.0.0.1:{}/dhp", pw.trim(), port.trim()))
}

/// The checkpoints one node holds for the round's schema: the highest seq
/// per handoff, and the completed handoffs. On a standby, after the WAL it
/// received has been replayed (waits up to 3 s for replay to catch up).
pub fn snapshot(dir: &Path, node: &str, schema: &str) -> Result<(serde_json::Value, Vec<String>, String)> {
    let mut c = crate::pg::connect(&node_url(dir, node)?, schema, Duration::from_secs(3))?;
    let end = std::time::Instant::now() + Duration::from_secs(3);
    let lsn = loop {
        let r = c.query_one(
            "SELECT pg_is_in_recovery(), COALESCE(pg_last_wal_receive_lsn()::text, ''), \
             COALESCE(pg_last_wal_replay_lsn()::text, ''), \
             COALESCE(pg_last_wal_receive_lsn() <= pg_last_wal_replay_lsn(), true)",
            &[],
        )?;
        let (standby, replay, caught_up): (bool, String, bool) = (r.get(0), r.get(2), r.get(3));
        if !standby || caught_up || std::time::Instant::now() > end {
            break replay;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut seqs = serde_json::Map::new();
    for r in c.query("SELECT hid, max(seq) FROM checkpoints GROUP BY hid ORDER BY hid", &[])? {
        seqs.insert(r.get::<_, String>(0), serde_json::json!(r.get::<_, Option<i64>>(1)));
    }
    let mut completed = Vec::new();
    for r in c.query("SELECT hid, envelope_json FROM handoffs ORDER BY hid", &[])? {
        let env: serde_json::Value = serde_json::from_str(&r.get::<_, String>(1)).unwrap_or_default();
        if env.pointer("/execution/status").and_then(serde_json::Value::as_str) == Some("completed") {
            completed.push(r.get::<_, String>(0));
        }
    }
    Ok((serde_json::Value::Object(seqs), completed, lsn))
}
