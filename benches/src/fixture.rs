//! Stores, envelopes, states and logs the benchmarks run on.
//!
//! Everything here is set-up: it is never inside a timed region. The same
//! shapes are produced by `benches/ref_bench.py` for the reference, so both
//! implementations hash, store and ship identical bytes.

use dhp_core::envelope::{self, Budget, BuildOptions};
use dhp_core::json;
use dhp_core::store::{with_tx, Mode, SqliteStore};
use dhp_core::transport::log;
use dhp_core::{Config, Lease, Result, Runner, Supervisor};
use rusqlite::{params, Connection};
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Task kind of the benchmark handoffs.
pub const KIND: &str = "bench.task";

/// The configuration every benchmark runs with: the defaults, except a
/// lease long enough (1 h) that a measurement never outlives it. The
/// reference side uses the same lease.
pub fn bench_config() -> Config {
    Config { lease_interval_s: 1200.0, ..Config::default() }
}

/// The output schema of the benchmark handoffs.
pub fn schema() -> Value {
    json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]})
}

/// An SDK-level envelope (`dhp.dispatch` semantics: inputs wrapped as
/// `{"inline": ...}`, SDK budget, `created_by` "dhp-api") for item `i`.
pub fn sdk_envelope(i: u64) -> Result<Value> {
    envelope::build(
        KIND,
        json!({"inline": {"i": i, "payload": "x".repeat(64)}}),
        schema(),
        BuildOptions {
            budget: Some(Budget::SDK_DEFAULT.to_value()),
            created_by: Some("dhp-api".into()),
            ..Default::default()
        },
    )
}

/// A JSON object whose `json.dumps(sort_keys=True)` text is about `bytes`
/// long: `{"items": [{"id", "name", "score", "tags"}, ...], "n": ...}`.
/// `ref_bench.state_of_size` builds the identical object.
pub fn state_of_size(bytes: usize) -> Value {
    // One item is ~70 bytes of text.
    let n = (bytes / 70).max(1);
    let items: Vec<Value> = (0..n)
        .map(|j| {
            json!({"id": j, "name": format!("item-{j}"), "score": json::float(j as f64 * 0.5),
                   "tags": ["alpha", "beta"]})
        })
        .collect();
    json!({"n": n, "items": items})
}

/// The small census-like state a checkpoint benchmark writes.
pub fn small_state(i: u64) -> Value {
    json!({"next_n": i * 100, "count": i, "total": i * 7})
}

/// A fresh store root under `base` (a unique subdirectory).
pub fn fresh_root(base: &Path, tag: &str) -> PathBuf {
    // A bench dir that does not exist yet is made, not a panic.
    let _ = std::fs::create_dir_all(base);
    let d = tempfile::Builder::new().prefix(&format!("{tag}-")).tempdir_in(base).expect("tempdir under bench dir");
    d.keep()
}

/// Open a store and runner, dispatch one SDK envelope and claim it.
/// Returns the runner, the hid and the fence.
pub fn claimed(root: &Path, worker: &str, i: u64) -> Result<(Runner, String, i64)> {
    let r = Runner::open(root, worker, bench_config())?;
    let hid = r.dispatch(&sdk_envelope(i)?)?;
    let ctx = r.claim(&hid)?;
    let fence = ctx.fence().get();
    drop(ctx);
    Ok((r, hid, fence))
}

/// Insert checkpoints `start..start+n` of `hid` with a raw connection in
/// one transaction (fast pre-fill), then truncate the WAL so the measured
/// checkpoints start from a clean log.
pub fn prefill_checkpoints(db: &Path, hid: &str, start: i64, n: i64) -> Result<()> {
    let mut c = Connection::open(db)?;
    c.busy_timeout(std::time::Duration::from_secs(30))?;
    let at = envelope::utcnow_iso();
    {
        let tx = c.transaction()?;
        {
            let mut st = tx.prepare(
                "INSERT INTO checkpoints (hid, seq, state_json, state_hash, at) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for seq in start..start + n {
                let (text, hash) = json::state_text_and_hash(&small_state(seq as u64))?;
                st.execute(params![hid, seq, text, hash, at])?;
            }
        }
        tx.commit()?;
    }
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    Ok(())
}

/// A handoff claimed on a fresh store with `depth` earlier checkpoints. The
/// store stays on disk (under the caller's scratch directory) when the bed
/// is dropped: deleting it mid-run would slow the next measurement's fsyncs.
pub struct CheckpointBed {
    /// The store directory.
    pub root: PathBuf,
    /// The runner that claimed the handoff.
    pub runner: Runner,
    /// The claimed handoff.
    pub hid: String,
    /// Its fencing token.
    pub fence: i64,
    next: u64,
}

impl CheckpointBed {
    /// A bed under `base` whose handoff already has `depth` checkpoints.
    pub fn new(base: &Path, depth: i64) -> Result<Self> {
        Self::warmed(base, depth, 0)
    }

    /// Like [`CheckpointBed::new`], then `warm` untimed checkpoints on a
    /// second handoff of the same store: the WAL grows to its working size
    /// (and wraps) without changing the measured handoff's depth.
    pub fn warmed(base: &Path, depth: i64, warm: usize) -> Result<Self> {
        let root = fresh_root(base, &format!("ckpt{depth}"));
        let (runner, hid, fence) = claimed(&root, "w1", depth as u64)?;
        if depth > 0 {
            prefill_checkpoints(&root.join("dhp.sqlite3"), &hid, 0, depth)?;
        }
        if warm > 0 {
            let other = runner.dispatch(&sdk_envelope(u64::MAX - depth as u64)?)?;
            let f = runner.claim(&other)?.fence();
            for k in 0..warm {
                runner.checkpoint(&Lease::presented(&other, f)?, &small_state(k as u64))?;
            }
        }
        Ok(CheckpointBed { root, runner, hid, fence, next: depth as u64 })
    }

    /// One real, durable `Runner::checkpoint`.
    pub fn checkpoint(&mut self) -> Result<i64> {
        let st = small_state(self.next);
        self.next += 1;
        self.runner.checkpoint(&Lease::presented(&self.hid, self.fence)?, &st)
    }
}

/// Write a transport log of one envelope header and `lines` checkpoint
/// lines to `path`. Returns the hid.
pub fn write_log(path: &Path, lines: usize) -> Result<String> {
    let env = sdk_envelope(424_242)?;
    let hid = env["handoff_id"].as_str().unwrap_or_default().to_string();
    let mut out = String::new();
    out.push_str(&log::envelope_line(&env)?);
    out.push('\n');
    let at = envelope::utcnow_iso();
    for seq in 0..lines {
        let st = small_state(seq as u64);
        let (_, hash) = json::state_text_and_hash(&st)?;
        out.push_str(&log::checkpoint_line(seq as i64, &st, &hash, &at)?);
        out.push('\n');
    }
    let mut f = std::fs::File::create(path).map_err(|e| io_err(path, e))?;
    f.write_all(out.as_bytes()).map_err(|e| io_err(path, e))?;
    Ok(hid)
}

pub(crate) fn io_err(path: &Path, e: std::io::Error) -> dhp_core::Error {
    dhp_core::Error::Io { path: path.to_path_buf(), source: e }
}

/// A store with `n` running handoffs, each with a live lease, a recent
/// checkpoint-progress row and a budget within limits: the supervisor's
/// scan finds nothing to do and has to look at all of them. Filled with a
/// raw bulk insert (rows exactly as claim writes them).
pub fn scan_store(root: &Path, n: usize) -> Result<()> {
    let store = SqliteStore::open(root)?;
    drop(store);
    let mut c = Connection::open(root.join("dhp.sqlite3"))?;
    let t = envelope::now();
    let lease = t + 3.0 * 3600.0;
    {
        let tx = c.transaction()?;
        {
            let mut ins_h = tx.prepare("INSERT INTO handoffs (hid, envelope_json, updated_at) VALUES (?1, ?2, ?3)")?;
            let mut ins_o = tx.prepare(
                "INSERT INTO ownership (hid, holder, fence, lease_expires_at, heartbeat_interval_s, max_missed, \
                 updated_at) VALUES (?1, ?2, 0, ?3, 1200.0, 3, ?4)",
            )?;
            let mut ins_p = tx.prepare(
                "INSERT INTO progress (hid, last_checkpoint_at, last_digest, digest_repeat_count, updated_at) \
                 VALUES (?1, ?2, NULL, 0, ?3)",
            )?;
            for i in 0..n {
                let mut env = sdk_envelope(1_000_000 + i as u64)?;
                let hid = env["handoff_id"].as_str().unwrap_or_default().to_string();
                let holder = format!("w-{}", i % 16);
                let ex = env["execution"].as_object_mut().expect("built envelopes have execution");
                ex.insert("status".into(), json!("running"));
                ex.insert("runner_id".into(), json!(holder));
                ex.insert("claimed_at".into(), json::float(t));
                ex.insert("fence".into(), json!(0));
                ex.insert("steps".into(), json!(0));
                ex.insert("spend_usd".into(), json::float(0.0));
                ins_h.execute(params![hid, json::dumps(&env)?, t])?;
                ins_o.execute(params![hid, holder, lease, t])?;
                ins_p.execute(params![hid, t + 3.0 * 3600.0, t])?;
            }
        }
        tx.commit()?;
    }
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    Ok(())
}

/// Make `hid` orphaned the way the supervisor does (lease expired, then
/// the orphan CAS), ready for a recover race.
pub fn orphan(runner: &Runner, sup: &Supervisor, hid: &str) -> Result<()> {
    dhp_testkit::store::expire_lease(runner, hid)?;
    let a = sup.orphan(hid, dhp_core::supervisor::OrphanReason::LeaseExpired, None)?;
    assert_eq!(a["action"], "orphaned", "fixture orphan: {a}");
    Ok(())
}

/// Dispatch `n` SDK envelopes in one transaction (set-up only).
pub fn bulk_dispatch(r: &Runner, first: u64, n: u64) -> Result<Vec<String>> {
    let mut rows = Vec::with_capacity(n as usize);
    for i in first..first + n {
        let env = sdk_envelope(i)?;
        let hid = envelope::verify(&env)?;
        let mut stored = env.clone();
        stored["execution"]["checkpoints"] = json!([]);
        rows.push((hid, json::dumps(&stored)?));
    }
    with_tx(r.store().as_ref(), Mode::Write, |tx| {
        for (hid, text) in &rows {
            tx.insert_envelope(hid, text, dhp_core::StoreTime::now_local())?;
        }
        Ok(())
    })?;
    Ok(rows.into_iter().map(|(h, _)| h).collect())
}

/// A shared handle type for the backend, for the group-commit benches.
pub type SharedBackend = Arc<dyn dhp_core::store::Backend>;
