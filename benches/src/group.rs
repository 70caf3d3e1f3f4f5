//! Group commit: checkpoints of several handoffs sharing one transaction,
//! hence one WAL fsync.
//!
//! `Runner::checkpoint` is one `BEGIN IMMEDIATE` transaction per call, so
//! its rate is capped by the disk's fsync rate whatever the number of
//! handoffs. dhp-core's `checkpoint_many` applies exactly the checks of
//! `Runner::checkpoint` (holder and fence, live lease, status running,
//! checkpoint-count cap; then the row and the stall-clock reset) to a batch
//! of handoffs inside ONE transaction. [`GroupCommitter`] puts it behind a queue:
//! each caller blocks until its checkpoint is durable, and the committer
//! thread commits whatever has queued up since the last fsync, so N
//! concurrent workers share each fsync.
//!
//! Semantics per item are those of `Runner::checkpoint`: an item that fails
//! its check gets its own error and writes nothing; the others commit. If
//! the transaction itself fails, every item of the batch gets an error and
//! none is durable.

use dhp_core::store::Backend;
use dhp_core::{Config, Error, Result, Runner};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

pub use dhp_core::runner::{checkpoint_many, CheckpointItem as Item};

/// [`Runner::dispatch_many`]: several envelopes in one transaction.
pub fn dispatch_many(r: &Runner, envs: &[Value]) -> Result<Vec<Result<String>>> {
    r.dispatch_many(envs)
}

/// [`Runner::claim_many`] for `holder`, returning each fence.
pub fn claim_many(r: &Runner, holder: &str, hids: &[String]) -> Result<Vec<Result<i64>>> {
    Ok(r.with_id(holder)?.claim_many(hids)?.into_iter().map(|c| c.map(|c| c.fence().get())).collect())
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
    /// Write transactions committed.
    pub transactions: u64,
    /// Checkpoints written by them.
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
        let gone =
            || Error::Io { path: PathBuf::from("group-commit"), source: std::io::Error::other("committer stopped") };
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
    use dhp_core::Lease;

    #[test]
    fn batch_commits_each_and_fences_stale_tokens() {
        let d = tempfile::tempdir().unwrap();
        let (r, h1, f1) = fixture::claimed(d.path(), "w1", 1).unwrap();
        let r2 = r.with_id("w2").unwrap();
        let h2 = r2.dispatch(&fixture::sdk_envelope(2).unwrap()).unwrap();
        let f2 = r2.claim(&h2).unwrap().fence();
        let cfg = fixture::bench_config();
        let items = vec![
            Item { hid: h1.clone(), holder: "w1".into(), fence: f1.into(), state: fixture::small_state(1) },
            Item { hid: h2.clone(), holder: "w2".into(), fence: f2, state: fixture::small_state(2) },
            Item { hid: h1.clone(), holder: "w1".into(), fence: f1.into(), state: fixture::small_state(3) },
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
        assert_eq!(r.checkpoint(&Lease::presented(&h1, f1).unwrap(), &fixture::small_state(5)).unwrap(), 2);
    }

    #[test]
    fn dispatch_and_claim_many_match_the_runner() {
        let d = tempfile::tempdir().unwrap();
        let r = dhp_core::Runner::open(d.path(), "w1", fixture::bench_config()).unwrap();
        let envs: Vec<Value> = (0..5).map(|i| fixture::sdk_envelope(i).unwrap()).collect();
        let mut bad = envs[0].clone();
        bad["task"]["inputs"]["inline"]["i"] = serde_json::json!(99);
        let mut all = envs.clone();
        all.push(bad);
        let out = dispatch_many(&r, &all).unwrap();
        assert!(out[5].is_err(), "a tampered envelope is refused on its own");
        let hids: Vec<String> = out[..5].iter().map(|h| h.as_ref().unwrap().clone()).collect();
        // Same stored text as Runner::dispatch: re-dispatch through the runner is a no-op.
        assert_eq!(r.dispatch(&envs[0]).unwrap(), hids[0]);
        let claimed = claim_many(&r, "w1", &hids[..4]).unwrap();
        assert!(claimed.iter().all(|c| c.as_ref().unwrap() == &0));
        assert!(claim_many(&r, "w2", &hids[..1]).unwrap()[0].is_err(), "claimed twice");
        // The runner takes over where the batch left off.
        assert_eq!(r.checkpoint(&Lease::presented(&hids[0], 0).unwrap(), &fixture::small_state(1)).unwrap(), 0);
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
                        let it = Item {
                            hid: h.clone(),
                            holder: "w".into(),
                            fence: 0.into(),
                            state: fixture::small_state(k),
                        };
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
