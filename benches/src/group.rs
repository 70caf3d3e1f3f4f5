//! Group commit: checkpoints of several handoffs sharing one transaction,
//! hence one WAL fsync.
//!
//! `Runner::checkpoint` is one `BEGIN IMMEDIATE` transaction per call, so
//! its rate is capped by the disk's fsync rate whatever the number of
//! handoffs. [`checkpoint_many`] applies exactly the checks of
//! `Runner::checkpoint` (holder and fence, live lease, status running,
//! checkpoint-count cap; then the row and the stall-clock reset) to a batch
//! of handoffs inside ONE transaction, through the public
//! [`Backend`]/[`Tx`] traits. [`GroupCommitter`] puts it behind a queue:
//! each caller blocks until its checkpoint is durable, and the committer
//! thread commits whatever has queued up since the last fsync, so N
//! concurrent workers share each fsync.
//!
//! Semantics per item are those of `Runner::checkpoint`: an item that fails
//! its check gets its own error and writes nothing; the others commit. If
//! the transaction itself fails, every item of the batch gets an error and
//! none is durable.

use dhp_core::envelope::{now, utcnow_iso};
use dhp_core::runner::checked_state;
use dhp_core::store::{Backend, CheckpointRow, Mode, Progress, Tx};
use dhp_core::{Config, Error, Result};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// One checkpoint request: who presents which token for which handoff.
#[derive(Debug, Clone)]
pub struct Item {
    pub hid: String,
    pub holder: String,
    pub fence: i64,
    pub state: Value,
}

fn check_owner(tx: &mut dyn Tx, it: &Item) -> Result<()> {
    let own = tx.ownership(&it.hid)?;
    match &own {
        Some(o) if o.holder == it.holder && o.fence == it.fence => {
            let t = now();
            if o.lease_expires_at < t {
                return Err(Error::LeaseLost { hid: it.hid.clone(), expired_ago_s: t - o.lease_expires_at });
            }
        }
        _ => {
            return Err(Error::StaleFence {
                hid: it.hid.clone(),
                holder: it.holder.clone(),
                presented: it.fence,
                current: own.as_ref().map(|o| o.fence),
                current_holder: own.map(|o| o.holder),
            })
        }
    }
    match tx.status(&it.hid)? {
        None => Err(Error::UnknownHandoff { hid: it.hid.clone() }),
        Some(s) if s == "running" => Ok(()),
        Some(s) => Err(Error::State { hid: it.hid.clone(), op: "write", reason: format!("not running (status={s})") }),
    }
}

fn one(tx: &mut dyn Tx, it: &Item, text: &str, hash: &str, max: i64) -> Result<i64> {
    dhp_core::envelope::check_hid(&it.hid)?;
    check_owner(tx, it)?;
    let seq = tx.next_seq(&it.hid)?;
    if seq >= max {
        return Err(Error::Oversize { what: "checkpoint count", size: seq as usize, limit: max as usize });
    }
    let row = CheckpointRow { seq, state_json: text.to_string(), state_hash: hash.to_string(), at: utcnow_iso() };
    if !tx.insert_checkpoint(&it.hid, &row)? {
        return Err(Error::OwnershipLost { hid: it.hid.clone(), reason: format!("checkpoint seq {seq} taken") });
    }
    let t = now();
    let last_digest = tx.progress(&it.hid)?.and_then(|p| p.last_digest);
    tx.put_progress(&it.hid, &Progress { last_checkpoint_at: Some(t), last_digest, digest_repeat_count: 0 }, t)?;
    Ok(seq)
}

/// Append one checkpoint per item, all in one write transaction (one
/// fsync). Returns each item's seq or its own error; `Err` only when the
/// transaction as a whole failed (then nothing was written).
pub fn checkpoint_many(store: &dyn Backend, cfg: &Config, items: &[Item]) -> Result<Vec<Result<i64>>> {
    // Hash outside the write lock, as Runner::checkpoint does.
    let prepared: Vec<Result<(String, String)>> = items.iter().map(|it| checked_state(&it.state, cfg)).collect();
    let max = cfg.max_checkpoints_per_handoff;
    let mut out: Vec<Result<i64>> = Vec::new();
    store.transact(Mode::Write, &mut |tx| {
        out.clear();
        for (it, p) in items.iter().zip(&prepared) {
            out.push(match p {
                Ok((text, hash)) => one(tx, it, text, hash, max),
                Err(e) => Err(Error::Validation(e.to_string())),
            });
        }
        Ok(())
    })?;
    Ok(out)
}

/// Dispatch several envelopes in one transaction (one fsync): each is
/// verified and stored as `Runner::dispatch` stores it (checkpoints emptied,
/// Python `json.dumps` text, size-checked); re-dispatching an existing id
/// is a no-op, as there. Returns each envelope's id or its own error.
pub fn dispatch_many(store: &dyn Backend, cfg: &Config, envs: &[Value]) -> Result<Vec<Result<String>>> {
    let prepared: Vec<Result<(String, String)>> = envs
        .iter()
        .map(|env| {
            let hid = dhp_core::envelope::verify(env)?;
            if dhp_core::envelope::status(env) != "pending" {
                return Err(Error::State { hid, op: "dispatch", reason: "envelope not pending".into() });
            }
            let mut stored = env.clone();
            if let Some(ex) = stored.get_mut("execution").and_then(Value::as_object_mut) {
                ex.insert("checkpoints".into(), Value::Array(Vec::new()));
            }
            let text = dhp_core::json::dumps(&stored)?;
            if text.len() > cfg.max_envelope_bytes {
                return Err(Error::Oversize { what: "envelope", size: text.len(), limit: cfg.max_envelope_bytes });
            }
            Ok((hid, text))
        })
        .collect();
    let mut out = Vec::new();
    store.transact(Mode::Write, &mut |tx| {
        out.clear();
        for p in &prepared {
            out.push(match p {
                Ok((hid, text)) => tx.insert_envelope(hid, text, now()).map(|_| hid.clone()),
                Err(e) => Err(Error::Validation(e.to_string())),
            });
        }
        Ok(())
    })?;
    Ok(out)
}

/// Claim several pending handoffs for `holder` in one transaction (one
/// fsync), with the writes of `Runner::claim`: an ownership row with fence
/// 0 and a fresh lease, status running, `runner_id`, `claimed_at`, `fence`,
/// `steps`/`spend_usd` defaults. Returns each fence or its own error.
pub fn claim_many(store: &dyn Backend, cfg: &Config, holder: &str, hids: &[String]) -> Result<Vec<Result<i64>>> {
    dhp_core::envelope::check_worker_id(holder)?;
    let mut out = Vec::new();
    store.transact(Mode::Write, &mut |tx| {
        out.clear();
        for hid in hids {
            out.push(claim_one(tx, cfg, holder, hid));
        }
        Ok(())
    })?;
    Ok(out)
}

fn claim_one(tx: &mut dyn Tx, cfg: &Config, holder: &str, hid: &str) -> Result<i64> {
    use serde_json::json;
    dhp_core::envelope::check_hid(hid)?;
    let mut env = tx.envelope(hid)?.ok_or_else(|| Error::UnknownHandoff { hid: hid.to_string() })?;
    let st = dhp_core::envelope::status(&env).to_string();
    if st != "pending" {
        return Err(Error::State { hid: hid.to_string(), op: "claim", reason: format!("status is {st}") });
    }
    let t = now();
    let own = dhp_core::store::Ownership {
        hid: hid.to_string(),
        holder: holder.to_string(),
        fence: 0,
        lease_expires_at: t + cfg.lease_ttl_s(),
        heartbeat_interval_s: cfg.lease_interval_s,
        max_missed: cfg.lease_max_missed,
    };
    if !tx.insert_ownership(&own, t)? {
        return Err(Error::OwnershipLost { hid: hid.to_string(), reason: "claim race lost".into() });
    }
    let ex = env
        .get_mut("execution")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| Error::Validation("envelope has no execution object".into()))?;
    ex.insert("status".into(), json!("running"));
    ex.insert("runner_id".into(), json!(holder));
    ex.insert("claimed_at".into(), dhp_core::json::float(t));
    ex.insert("fence".into(), json!(0));
    ex.entry("steps").or_insert(json!(0));
    ex.entry("spend_usd").or_insert(dhp_core::json::float(0.0));
    ex.insert("checkpoints".into(), json!([]));
    let text = dhp_core::json::dumps(&env)?;
    if text.len() > cfg.max_envelope_bytes {
        return Err(Error::Oversize { what: "envelope", size: text.len(), limit: cfg.max_envelope_bytes });
    }
    if !tx.update_envelope(hid, &text, t)? {
        return Err(Error::UnknownHandoff { hid: hid.to_string() });
    }
    Ok(0)
}

type Reply = SyncSender<Result<i64>>;

/// A committer thread that batches concurrent checkpoint requests.
pub struct GroupCommitter {
    tx: Option<Sender<(Item, Reply)>>,
    thread: Option<JoinHandle<()>>,
}

/// Statistics of a committer run.
#[derive(Debug, Default, Clone, Copy)]
pub struct CommitStats {
    pub transactions: u64,
    pub checkpoints: u64,
}

impl GroupCommitter {
    /// Start the committer over `store`. At most `max_batch` checkpoints go
    /// into one transaction.
    pub fn start(store: Arc<dyn Backend>, cfg: Config, max_batch: usize) -> (Self, Arc<std::sync::Mutex<CommitStats>>) {
        let (tx, rx) = mpsc::channel::<(Item, Reply)>();
        let stats = Arc::new(std::sync::Mutex::new(CommitStats::default()));
        let st = stats.clone();
        let thread = std::thread::Builder::new()
            .name("dhp-group-commit".into())
            .spawn(move || committer(store, cfg, rx, max_batch.max(1), st))
            .expect("spawning the group committer");
        (GroupCommitter { tx: Some(tx), thread: Some(thread) }, stats)
    }

    /// A handle for one worker thread.
    pub fn handle(&self) -> CommitHandle {
        CommitHandle { tx: self.tx.clone().expect("committer running") }
    }
}

impl Drop for GroupCommitter {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What a worker thread holds to submit checkpoints.
#[derive(Clone)]
pub struct CommitHandle {
    tx: Sender<(Item, Reply)>,
}

impl CommitHandle {
    /// Submit and wait until the checkpoint is durable (or refused).
    pub fn checkpoint(&self, item: Item) -> Result<i64> {
        let (rtx, rrx) = mpsc::sync_channel(1);
        let gone = || Error::Io { path: PathBuf::from("group-commit"), source: std::io::Error::other("committer stopped") };
        self.tx.send((item, rtx)).map_err(|_| gone())?;
        rrx.recv().map_err(|_| gone())?
    }
}

fn committer(
    store: Arc<dyn Backend>,
    cfg: Config,
    rx: Receiver<(Item, Reply)>,
    max_batch: usize,
    stats: Arc<std::sync::Mutex<CommitStats>>,
) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < max_batch {
            match rx.try_recv() {
                Ok(x) => batch.push(x),
                Err(_) => break,
            }
        }
        let items: Vec<Item> = batch.iter().map(|(i, _)| i.clone()).collect();
        match checkpoint_many(store.as_ref(), &cfg, &items) {
            Ok(results) => {
                for ((_, reply), r) in batch.into_iter().zip(results) {
                    let _ = reply.send(r);
                }
            }
            Err(e) => {
                let msg = e.to_string();
                for (_, reply) in batch {
                    let _ = reply.send(Err(Error::Io {
                        path: PathBuf::from(store.describe()),
                        source: std::io::Error::other(msg.clone()),
                    }));
                }
            }
        }
        if let Ok(mut s) = stats.lock() {
            s.transactions += 1;
            s.checkpoints += items.len() as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn batch_commits_each_and_fences_stale_tokens() {
        let d = tempfile::tempdir().unwrap();
        let (r, h1, f1) = fixture::claimed(d.path(), "w1", 1).unwrap();
        let r2 = r.with_id("w2").unwrap();
        let h2 = r2.dispatch(&fixture::sdk_envelope(2).unwrap()).unwrap();
        let f2 = r2.claim(&h2).unwrap().fence();
        let cfg = fixture::bench_config();
        let items = vec![
            Item { hid: h1.clone(), holder: "w1".into(), fence: f1, state: fixture::small_state(1) },
            Item { hid: h2.clone(), holder: "w2".into(), fence: f2, state: fixture::small_state(2) },
            Item { hid: h1.clone(), holder: "w1".into(), fence: f1, state: fixture::small_state(3) },
            Item { hid: h2.clone(), holder: "w1".into(), fence: f2, state: fixture::small_state(4) },
        ];
        let out = checkpoint_many(r.store().as_ref(), &cfg, &items).unwrap();
        assert_eq!(out[0].as_ref().unwrap(), &0);
        assert_eq!(out[1].as_ref().unwrap(), &0);
        assert_eq!(out[2].as_ref().unwrap(), &1);
        assert!(out[3].as_ref().unwrap_err().is_ownership());
        assert_eq!(r.last_checkpoint(&h1).unwrap(), Some(fixture::small_state(3)));
        assert_eq!(r.checkpoints(&h2).unwrap().len(), 1);
        // The rows are the same a Runner::checkpoint writes: the runner continues the sequence.
        assert_eq!(r.checkpoint(&h1, f1, &fixture::small_state(5)).unwrap(), 2);
    }

    #[test]
    fn dispatch_and_claim_many_match_the_runner() {
        let d = tempfile::tempdir().unwrap();
        let r = dhp_core::Runner::open(d.path(), "w1", fixture::bench_config()).unwrap();
        let cfg = fixture::bench_config();
        let envs: Vec<Value> = (0..5).map(|i| fixture::sdk_envelope(i).unwrap()).collect();
        let mut bad = envs[0].clone();
        bad["task"]["inputs"]["inline"]["i"] = serde_json::json!(99);
        let mut all = envs.clone();
        all.push(bad);
        let out = dispatch_many(r.store().as_ref(), &cfg, &all).unwrap();
        assert!(out[5].is_err(), "a tampered envelope is refused on its own");
        let hids: Vec<String> = out[..5].iter().map(|h| h.as_ref().unwrap().clone()).collect();
        // Same stored text as Runner::dispatch: re-dispatch through the runner is a no-op.
        assert_eq!(r.dispatch(&envs[0]).unwrap(), hids[0]);
        let claimed = claim_many(r.store().as_ref(), &cfg, "w1", &hids[..4]).unwrap();
        assert!(claimed.iter().all(|c| c.as_ref().unwrap() == &0));
        assert!(claim_many(r.store().as_ref(), &cfg, "w2", &hids[..1]).unwrap()[0].is_err(), "claimed twice");
        // The runner takes over where the batch left off.
        assert_eq!(r.checkpoint(&hids[0], 0, &fixture::small_state(1)).unwrap(), 0);
        let mine = r.claim(&hids[4]).unwrap();
        let a = r.envelope_bare(&hids[4]).unwrap();
        let b = r.envelope_bare(&hids[3]).unwrap();
        let keys = |v: &Value| v["execution"].as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&a), keys(&b), "claim_many writes the fields Runner::claim writes, in its order");
        drop(mine);
    }

    #[test]
    fn committer_serves_concurrent_workers() {
        let d = tempfile::tempdir().unwrap();
        let r = dhp_core::Runner::open(d.path(), "w", fixture::bench_config()).unwrap();
        let mut hids = Vec::new();
        for i in 0..4 {
            let h = r.dispatch(&fixture::sdk_envelope(i).unwrap()).unwrap();
            r.claim(&h).unwrap();
            hids.push(h);
        }
        let (gc, stats) = GroupCommitter::start(r.store().clone(), fixture::bench_config(), 64);
        std::thread::scope(|s| {
            for h in &hids {
                let handle = gc.handle();
                s.spawn(move || {
                    for k in 0..5 {
                        let it = Item { hid: h.clone(), holder: "w".into(), fence: 0, state: fixture::small_state(k) };
                        assert_eq!(handle.checkpoint(it).unwrap(), k as i64);
                    }
                });
            }
        });
        drop(gc);
        let s = *stats.lock().unwrap();
        assert_eq!(s.checkpoints, 20);
        assert!(s.transactions <= 20);
        for h in &hids {
            assert_eq!(r.checkpoints(h).unwrap().len(), 5);
        }
    }
}
