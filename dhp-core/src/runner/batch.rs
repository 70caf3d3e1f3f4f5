//! Group commit: many dispatches, claims or checkpoints in one transaction.

use super::lifecycle::{append_checkpoint, claim_in, prepare_dispatch};
use super::{budget_violation, checked_state, Runner, TaskContext};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::events::Event;
use crate::id::HandoffId;
use crate::id::WorkerId;
use crate::lease::Fence;
use crate::lease::Lease;
use crate::store::{Backend, Mode};
use serde_json::Value;

impl Runner {
    /// Dispatch several envelopes in one transaction (one fsync for all).
    /// Each gets its own id or its own error; `Err` only when the
    /// transaction as a whole failed, and then nothing was stored.
    pub fn dispatch_many(&self, envs: &[Value]) -> Result<Vec<Result<String>>> {
        let prepared: Vec<Result<(HandoffId, String)>> = envs.iter().map(|e| prepare_dispatch(e, &self.cfg)).collect();
        let now = self.cfg.clock.store_time();
        let mut out = Vec::with_capacity(envs.len());
        self.store.transact(Mode::Write, &mut |tx| {
            out.clear();
            for p in &prepared {
                out.push(match p {
                    Ok((hid, text)) => Some(tx.insert_envelope(hid.as_str(), text, now).map(|_| hid.to_string())),
                    Err(_) => None,
                });
            }
            Ok(())
        })?;
        Ok(merge(prepared, out))
    }

    /// Claim several pending handoffs in one transaction (one fsync for
    /// all), each with the writes and checks of [`Runner::claim`].
    pub fn claim_many(&self, hids: &[String]) -> Result<Vec<Result<TaskContext>>> {
        let parsed: Vec<Result<HandoffId>> = hids.iter().map(|h| HandoffId::parse(h)).collect();
        let mut envs = Vec::with_capacity(hids.len());
        self.store.transact(Mode::Write, &mut |tx| {
            envs.clear();
            for hid in &parsed {
                envs.push(match hid {
                    Ok(hid) => {
                        Some(claim_in(tx, &self.cfg, &self.id, hid.as_str()).map(|(env, t)| (hid.clone(), env, t)))
                    }
                    Err(_) => None,
                });
            }
            Ok(())
        })?;
        Ok(merge(parsed, envs)
            .into_iter()
            .map(|claimed| {
                let (hid, env, t) = claimed?;
                match budget_violation(&env, t) {
                    Some(reason) => Err(Error::BudgetExceeded { hid: hid.into(), reason }),
                    None => Ok(TaskContext::new(self.clone(), Lease::granted(hid, Fence::FIRST))),
                }
            })
            .collect())
    }
}

/// One checkpoint of a batch: who presents which token for which handoff.
#[derive(Debug, Clone)]
pub struct CheckpointItem {
    /// The handoff to checkpoint (validated before the transaction).
    pub hid: String,
    /// The worker id presenting the token: must be the current owner.
    pub holder: String,
    /// The fencing token presented: must be the current fence.
    pub fence: Fence,
    /// The state to append: a JSON object within `max_checkpoint_bytes`.
    pub state: Value,
}

/// A batch item checked before the transaction: the holder, its lease,
/// and the state's text and hash.
type Prepared = (WorkerId, Lease, (String, String));

/// Group commit: append one checkpoint per item — of any handoffs and
/// holders — in ONE write transaction, hence one fsync. Each item gets the
/// checks of [`Runner::checkpoint`] and its own seq or error; `Err` only
/// when the transaction as a whole failed (then nothing was written).
pub fn checkpoint_many(store: &dyn Backend, cfg: &Config, items: &[CheckpointItem]) -> Result<Vec<Result<i64>>> {
    // Parse and hash outside the write lock, as Runner::checkpoint does.
    // Each item presents a token from its own holder, not one of ours.
    // Ids are checked per item as the hid is: a malformed one is that
    // item's ValidationError (docs/PROTOCOL.md §1.2).
    let prepared: Vec<Result<Prepared>> = items
        .iter()
        .map(|it| {
            let lease = Lease::presented(&it.hid, it.fence)?;
            Ok((WorkerId::parse(&it.holder)?, lease, checked_state(&it.state, cfg)?))
        })
        .collect();
    let mut out = Vec::with_capacity(items.len());
    // An item whose lease ran out between its check and the commit (the
    // process was stopped meanwhile) would commit rows stamped after its
    // lease: the whole transaction rolls back and runs again, and then that
    // item fails its check while the others are written. Each run refuses
    // at least the item that ran out, so this ends within a run per item.
    let mut runs = 0;
    loop {
        runs += 1;
        let r = store.transact(Mode::Write, &mut |tx| {
            out.clear();
            let mut live = Vec::new();
            for p in &prepared {
                out.push(match p {
                    Ok((holder, lease, (text, hash))) => {
                        Some(append_checkpoint(tx, cfg, holder, lease, text, hash, 0).map(|(l, (row, ..))| {
                            live.push(l);
                            row.seq
                        }))
                    }
                    Err(_) => None,
                });
            }
            live.iter().try_for_each(|l| l.still_live(tx, cfg))
        });
        match r {
            Err(Error::LeaseLost { .. }) if runs <= items.len() => continue,
            r => break r?,
        }
    }
    if cfg.hooks.active() {
        for (it, r) in items.iter().zip(&out) {
            if let Some(Ok(seq)) = r {
                cfg.hooks.emit(Event::Checkpointed { hid: &it.hid, fence: it.fence, seq: *seq });
            }
        }
    }
    Ok(merge(prepared, out))
}

/// Per-item results of a batch: an item refused before the transaction
/// keeps its own (typed) error, the others their outcome inside it.
pub(super) fn merge<P, R>(prepared: Vec<Result<P>>, done: Vec<Option<Result<R>>>) -> Vec<Result<R>> {
    prepared
        .into_iter()
        .zip(done)
        .map(|(p, d)| match (p, d) {
            (Err(e), _) => Err(e),
            (Ok(_), Some(r)) => r,
            (Ok(_), None) => unreachable!("every prepared item has an outcome"),
        })
        .collect()
}
