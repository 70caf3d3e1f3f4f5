//! `--pg-cluster sync|async`: a replicated PostgreSQL cluster the run owns
//! ([`crate::db::cluster`], the layout of `scripts/pg-cluster.sh`): a primary, a synchronous standby and an
//! asynchronous one, three servers on 127.0.0.1 (one port each, not network
//! namespaces), streaming replication. The clients get a multi-host URL
//! with `target_session_attrs=read-write` and follow the primary.
//!
//! Failover manager, `--failover-manager`:
//! - `harness` ([`FAILOVER_MANAGER`]): the harness itself crashes and
//!   fences the primary and promotes the synchronous standby with `pg_ctl
//!   promote` (`round/db_failover.rs`); `sync` or `async` replication.
//! - `pg_auto_failover` ([`AUTO_MANAGER`], [`crate::db::auto`]): a real
//!   failover manager from Debian's packages — a monitor and three keepers,
//!   every node in its own network namespace; the monitor promotes, the
//!   harness only breaks things and watches (`round/db_auto.rs`).

use anyhow::{bail, Context, Result};
use std::path::Path;
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
    /// The harness, `pg_ctl promote` ([`crate::db::cluster`]).
    Harness,
    /// pg_auto_failover's monitor ([`crate::db::auto`]).
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

/// Set up a replicated cluster this run owns: the harness-promoted one
/// ([`crate::db::cluster`]) or pg_auto_failover's ([`crate::db::auto`],
/// quorum-synchronous only); torn down when the returned value is dropped.
pub fn start_owned(replication: Replication, manager: Manager) -> Result<crate::db::Owned> {
    Ok(match manager {
        Manager::Harness => crate::db::cluster::setup(replication == Replication::Async)?,
        Manager::PgAutoFailover if replication == Replication::Async => bail!("{AUTO_SYNC_ONLY}"),
        Manager::PgAutoFailover => crate::db::auto::setup()?,
    })
}

/// Is `dir` a replicated cluster's directory (either manager's)?
pub fn is_cluster_dir(dir: &Path) -> bool {
    dir.join("roles").is_file() && dir.join("n0/port").is_file()
}

pub use crate::db::auto::{primary_of as auto_primary, whole as auto_whole, NodeState};

/// The monitor's view of the pg_auto_failover cluster in `dir`.
pub fn auto_state(dir: &Path) -> Result<Vec<NodeState>> {
    Ok(crate::db::auto::Auto::at(dir, crate::db::sys::Log::default())?.state()?)
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
