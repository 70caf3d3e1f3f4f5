//! `--pg-cluster sync|async`: a replicated PostgreSQL cluster the run owns
//! (`scripts/pg-cluster.sh`): a primary, a synchronous standby and an
//! asynchronous one, three servers on 127.0.0.1 (one port each, not network
//! namespaces), streaming replication. The clients get a multi-host URL
//! with `target_session_attrs=read-write` and follow the primary.
//!
//! Failover manager, `--failover-manager`:
//! - `harness` ([`FAILOVER_MANAGER`]): the harness itself crashes and
//!   fences the primary and promotes the synchronous standby with `pg_ctl
//!   promote` (`round/db_failover.rs`); `sync` or `async` replication.
//! - `pg_auto_failover` ([`AUTO_MANAGER`], `scripts/pg-auto.sh`): a real
//!   failover manager from Debian's packages — a monitor and three keepers,
//!   every node in its own network namespace; the monitor promotes, the
//!   harness only breaks things and watches (`round/db_auto.rs`).

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What every round file and report says promotes a standby (`--failover-manager harness`).
pub const FAILOVER_MANAGER: &str = "harness (pg_ctl promote)";
/// The same for `--failover-manager pg_auto_failover`.
pub const AUTO_MANAGER: &str = "pg_auto_failover (monitor + keepers, a network namespace per node)";

/// Why pg_auto_failover's cluster is refused with `--pg-cluster async`.
pub const AUTO_SYNC_ONLY: &str = "--failover-manager pg_auto_failover runs quorum-synchronous replication (ANY 1): use --pg-cluster sync, or --failover-manager harness for async";

/// Who promotes a standby.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Manager {
    /// The harness, `pg_ctl promote` (`scripts/pg-cluster.sh`).
    Harness,
    /// pg_auto_failover's monitor (`scripts/pg-auto.sh`).
    PgAutoFailover,
}

impl Manager {
    /// `harness` / `pg_auto_failover`, as `--failover-manager` takes it.
    pub fn parse(s: &str) -> Result<Manager> {
        match s {
            "harness" => Ok(Manager::Harness),
            "pg_auto_failover" => Ok(Manager::PgAutoFailover),
            _ => bail!("--failover-manager wants harness or pg_auto_failover, not {s:?}"),
        }
    }

    /// The label every round file and report carries.
    pub fn label(self) -> &'static str {
        match self {
            Manager::Harness => FAILOVER_MANAGER,
            Manager::PgAutoFailover => AUTO_MANAGER,
        }
    }

    /// Is `label` (a round's `failover_manager`) pg_auto_failover's?
    pub fn is_auto(label: Option<&str>) -> bool {
        label == Some(AUTO_MANAGER)
    }
}

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
    /// Who promotes.
    pub manager: Manager,
}

impl OwnedReplicated {
    /// `scripts/pg-cluster.sh start [--async] --watch <this pid>`, or
    /// `scripts/pg-auto.sh start --watch <this pid>` (quorum-synchronous only).
    pub fn start(replication: Replication, manager: Manager) -> Result<OwnedReplicated> {
        let script = match manager {
            Manager::Harness => script()?,
            Manager::PgAutoFailover => auto_script()?,
        };
        let mut cmd = std::process::Command::new("bash");
        cmd.arg(&script).arg("start");
        if replication == Replication::Async {
            if manager == Manager::PgAutoFailover {
                bail!("{AUTO_SYNC_ONLY}");
            }
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
        let c = OwnedReplicated { script, dir: PathBuf::from(dir), url: url.to_string(), replication, manager };
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

/// scripts/pg-auto.sh as built into this program.
pub fn auto_script() -> Result<PathBuf> {
    crate::pg::cached_script("pg-auto", include_str!("../../scripts/pg-auto.sh"))
}

/// Is `dir` a `scripts/pg-cluster.sh` directory?
pub fn is_cluster_dir(dir: &Path) -> bool {
    dir.join("roles").is_file() && dir.join("n0/port").is_file()
}

/// One node as pg_auto_failover's monitor sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeState {
    /// `n0`, `n1`, `n2`.
    pub name: String,
    /// The state its keeper last reported.
    pub reported: String,
    /// The state the monitor assigned.
    pub goal: String,
}

/// `scripts/pg-auto.sh state DIR`: the monitor's view (an error when the
/// monitor cannot be asked).
pub fn auto_state(dir: &Path) -> Result<Vec<NodeState>> {
    let out = std::process::Command::new("bash")
        .arg(auto_script()?)
        .arg("state")
        .arg(dir)
        .stderr(std::process::Stdio::null())
        .output()
        .context("running scripts/pg-auto.sh state")?;
    if !out.status.success() {
        bail!("the pg_auto_failover monitor did not answer ({})", out.status);
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some(NodeState { name: w.next()?.into(), reported: w.next()?.into(), goal: w.next()?.into() })
        })
        .collect())
}

/// The node both the monitor and its keeper call primary, if exactly one.
pub fn auto_primary(nodes: &[NodeState]) -> Option<&str> {
    let mut p = nodes.iter().filter(|n| n.reported == "primary" && n.goal == "primary");
    match (p.next(), p.next()) {
        (Some(n), None) => Some(&n.name),
        _ => None,
    }
}

/// One primary and every other node a streaming secondary, each where the monitor wants it.
pub fn auto_whole(nodes: &[NodeState]) -> bool {
    auto_primary(nodes).is_some()
        && nodes.len() >= 2
        && nodes.iter().all(|n| n.reported == n.goal && (n.goal == "primary" || n.goal == "secondary"))
}

/// How many standbys stream from `primary` (its `pg_stat_replication`):
/// the monitor's states lag a dead standby by its health checks, so
/// "whole" is also asked of the primary itself.
pub fn auto_streaming(dir: &Path, primary: &str) -> Result<usize> {
    let mut c = crate::pg::connect(&node_url(dir, primary)?, "public", Duration::from_secs(2))?;
    let n: i64 = c.query_one("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'", &[])?.get(0);
    Ok(usize::try_from(n).unwrap_or(0))
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
    // pg-auto.sh's nodes live in namespaces of their own, each at an address
    let host = std::fs::read_to_string(dir.join(node).join("host")).unwrap_or_else(|_| "127.0.0.1".into());
    Ok(format!("postgres://postgres:{}@{}:{}/dhp?connect_timeout=2", pw.trim(), host.trim(), port.trim()))
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
