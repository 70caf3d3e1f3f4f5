//! `mutant-supervisor`: deliberately broken supervisors, to prove that
//! dhp-chaos judges supervisors by the store's commit order (the store
//! audit), not by what they say about themselves. Same command line as
//! `dhp supervisor` (so it plugs in as `--supervisors "mutant-supervisor
//! --mode M"`), SQLite stores only, lease-expiry orphaning only (no
//! liveness tokens, no budget kill, no stall detection). Every mode writes
//! the history line a correct supervisor would — `supervise ok` with
//! `previous_fence` and `fence = previous_fence + 1` — whatever it did:
//!
//! - `no-bump`: orphans an expired lease by moving ownership to
//!   `__orphaned__` WITHOUT bumping the fence (its history claims the bump);
//! - `two-leaders`: takes the leadership row at every scan, whoever holds
//!   it and however long their term has to run;
//! - `no-dlq`: never dead-letters: an expired lease at or past
//!   `max_attempts` is orphaned again instead of failed;
//! - `no-orphan`: leads, and never orphans anything: a dead worker's
//!   handoff stays running (caught by `detection`).
//!
//! Caught by the `model` invariant (docs/chaos-model.md):
//!
//! - `no-leader-row`: believes it leads without ever writing the
//!   leadership row, and orphans (every one of them at once);
//! - `replace-leader`: takes the leadership with `INSERT OR REPLACE` at
//!   every scan, inside another supervisor's live term;
//! - `undlq`: dead-letters correctly, then at its next scans moves every
//!   DLQ handoff back to `orphaned`, so a worker recovers it.
//!
//! ```text
//! mutant-supervisor --mode no-bump|two-leaders|no-dlq|no-orphan|no-leader-row|replace-leader|undlq ROOT ID SECONDS [--history FILE]
//! ```

use anyhow::{bail, Context, Result};
use dhp_core::{json, Config};
use dhp_workload::history::History;
use dhp_workload::history::Kind as H;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const ORPHANED: &str = "__orphaned__";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    NoBump,
    TwoLeaders,
    NoDlq,
    NoOrphan,
    NoLeaderRow,
    ReplaceLeader,
    Undlq,
}

struct Args {
    mode: Mode,
    root: PathBuf,
    id: String,
    seconds: f64,
    history: Option<PathBuf>,
}

fn parse_args() -> Result<Args> {
    let (mut mode, mut history, mut pos) = (None, None, Vec::new());
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--mode" => mode = Some(it.next().context("--mode needs a value")?),
            "--history" => history = Some(PathBuf::from(it.next().context("--history needs a value")?)),
            s if s.starts_with("--") => bail!("unknown flag {s}"),
            _ => pos.push(a),
        }
    }
    let [root, id, seconds] =
        <[String; 3]>::try_from(pos).map_err(|p| anyhow::anyhow!("want ROOT ID SECONDS, got {p:?}"))?;
    let mode = match mode.as_deref() {
        Some("no-bump") => Mode::NoBump,
        Some("two-leaders") => Mode::TwoLeaders,
        Some("no-dlq") => Mode::NoDlq,
        Some("no-orphan") => Mode::NoOrphan,
        Some("no-leader-row") => Mode::NoLeaderRow,
        Some("replace-leader") => Mode::ReplaceLeader,
        Some("undlq") => Mode::Undlq,
        other => {
            bail!("--mode no-bump|two-leaders|no-dlq|no-orphan|no-leader-row|replace-leader|undlq (got {other:?})")
        }
    };
    let seconds: f64 = seconds.parse().context("SECONDS must be a number")?;
    dhp_core::config::duration_from_secs("SECONDS", seconds, 86_400.0)?;
    Ok(Args { mode, root: PathBuf::from(root), id, seconds, history })
}

fn now() -> f64 {
    dhp_core::envelope::now()
}

/// Take or renew the leadership row; true when this supervisor leads.
fn lead(c: &mut Connection, a: &Args, ttl: f64) -> Result<bool> {
    let t = now();
    if a.mode == Mode::NoLeaderRow {
        return Ok(true); // "renewed", nothing written
    }
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    if a.mode == Mode::ReplaceLeader {
        tx.execute(
            "INSERT OR REPLACE INTO leadership (id, holder, expires_at, updated_at) VALUES (1, ?1, ?2, ?3)",
            params![a.id, t + ttl, t],
        )?;
    } else if a.mode == Mode::TwoLeaders {
        tx.execute(
            "INSERT INTO leadership (id, holder, expires_at, updated_at) VALUES (1, ?1, ?2, ?3) \
             ON CONFLICT(id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at, updated_at = excluded.updated_at",
            params![a.id, t + ttl, t],
        )?;
    } else {
        tx.execute(
            "INSERT INTO leadership (id, holder, expires_at, updated_at) VALUES (1, ?1, ?2, ?3) \
             ON CONFLICT(id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at, updated_at = excluded.updated_at \
             WHERE leadership.holder = excluded.holder OR leadership.expires_at < ?3",
            params![a.id, t + ttl, t],
        )?;
    }
    let holder: Option<String> =
        tx.query_row("SELECT holder FROM leadership WHERE id = 1", [], |r| r.get(0)).optional()?;
    tx.commit()?;
    Ok(holder.as_deref() == Some(a.id.as_str()))
}

/// Orphan every expired lease of a running handoff (the mode's way).
fn scan(c: &mut Connection, a: &Args, h: &History) -> Result<()> {
    let t = now();
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let expired: Vec<(String, String, i64)> = {
        let mut st =
            tx.prepare("SELECT hid, holder, fence FROM ownership WHERE holder != ?1 AND lease_expires_at < ?2")?;
        let rows = st.query_map(params![ORPHANED, t], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let mut lines = Vec::new();
    for (hid, holder, fence) in expired {
        let text: String = tx.query_row("SELECT envelope_json FROM handoffs WHERE hid = ?1", [&hid], |r| r.get(0))?;
        let mut env = json::parse(&text)?;
        if env.pointer("/execution/status").and_then(Value::as_str) != Some("running") {
            continue;
        }
        let new_fence = if a.mode == Mode::NoBump { fence } else { fence + 1 };
        tx.execute(
            "UPDATE ownership SET holder = ?1, fence = ?2, lease_expires_at = 0, updated_at = ?3 WHERE hid = ?4 AND holder = ?5 AND fence = ?6",
            params![ORPHANED, new_fence, t, hid, holder, fence],
        )?;
        let max_att = env.pointer("/contract/budget/max_attempts").and_then(Value::as_i64).unwrap_or(3);
        let ex = env["execution"].as_object_mut().context("envelope has no execution")?;
        let attempt = ex.get("attempt").and_then(Value::as_i64).unwrap_or(0);
        let action = if attempt >= max_att && a.mode != Mode::NoDlq {
            ex.insert("status".into(), json!("failed"));
            ex.insert("error".into(), json!(format!("lease-expired; max_attempts={max_att} exhausted → DLQ")));
            "dlq"
        } else {
            ex.insert("status".into(), json!("orphaned"));
            ex.insert("orphaned_at".into(), json!(t));
            ex.insert("orphan_reason".into(), json!("lease-expired"));
            "orphaned"
        };
        tx.execute(
            "UPDATE handoffs SET envelope_json = ?1, updated_at = ?2 WHERE hid = ?3",
            params![json::dumps(&env)?, t, hid],
        )?;
        let n: i64 = tx.query_row("SELECT count(*) FROM checkpoints WHERE hid = ?1", [&hid], |r| r.get(0))?;
        // what a correct supervisor would say, whatever this one did
        lines.push(json!({"hid": hid, "action": action, "reason": "lease-expired", "previous_holder": holder,
                          "previous_fence": fence, "fence": fence + 1, "checkpoints": n}));
    }
    if a.mode == Mode::Undlq {
        undlq(&tx, t)?;
    }
    tx.commit()?;
    for l in lines {
        h.record("supervise", H::Ok, l);
    }
    Ok(())
}

/// Move every dead-lettered handoff back to `orphaned` (a DLQ that leaks).
fn undlq(tx: &rusqlite::Transaction<'_>, t: f64) -> Result<()> {
    let failed: Vec<(String, String)> = {
        let mut st = tx.prepare("SELECT hid, envelope_json FROM handoffs")?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for (hid, text) in failed {
        let mut env = json::parse(&text)?;
        if env.pointer("/execution/status").and_then(Value::as_str) != Some("failed") {
            continue;
        }
        env["execution"]["status"] = json!("orphaned");
        env["execution"]["orphan_reason"] = json!("lease-expired");
        tx.execute(
            "UPDATE handoffs SET envelope_json = ?1, updated_at = ?2 WHERE hid = ?3",
            params![json::dumps(&env)?, t, hid],
        )?;
    }
    Ok(())
}

fn run() -> Result<()> {
    let a = parse_args()?;
    let cfg = Config::from_env()?;
    let h = match &a.history {
        Some(p) => History::open(p, &a.id)?,
        None => History::disabled(),
    };
    let mut c = Connection::open(a.root.join("dhp.sqlite3")).context("opening the SQLite store")?;
    c.busy_timeout(Duration::from_secs(30))?;
    let scan_every = dhp_core::config::duration_from_secs("DHP_SUPERVISOR_SCAN_S", cfg.supervisor_scan_s, 3_600.0)?;
    let start = Instant::now();
    while start.elapsed().as_secs_f64() < a.seconds {
        if lead(&mut c, &a, cfg.leader_ttl_s)? && a.mode != Mode::NoOrphan {
            scan(&mut c, &a, &h)?;
        }
        std::thread::sleep(scan_every);
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("mutant-supervisor: {e:#}");
        std::process::exit(5);
    }
}
