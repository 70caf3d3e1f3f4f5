//! Checkpoint and heartbeat as one round trip on backends that run the
//! whole transaction server-side ([`Backend::checkpoint_once`],
//! [`Backend::heartbeat_once`]: PostgreSQL). The backend reports what it
//! read under the handoff's lock; the checks here are the transactions'
//! own ([`super::owner_checks`], [`super::running_check`]), so a refusal is
//! the same typed error either way. The backend wrote only if those checks
//! pass, so a refusal left the store unchanged.

use super::{envelope_text, exec_mut, owner_checks, running_check};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::id::WorkerId;
use crate::json;
use crate::lease::Fence;
use crate::lease::Lease;
use crate::store::{Backend, CheckpointReq, CheckpointRow, OwnerSeen};
use serde_json::Value;

fn judge(holder: &WorkerId, hid: &str, fence: Fence, seen: OwnerSeen) -> Result<()> {
    owner_checks(holder, hid, fence, seen.ownership, seen.now)?;
    running_check(hid, seen.status)
}

/// The backend wrote although the checks refuse: never expected (the
/// server-side checks are these); said loudly rather than hidden.
fn disagree(hid: &str, op: &str, refusal: Error) -> Error {
    Error::validation(format!("{op} of {hid} was committed by the store although the runner refuses it: {refusal}"))
}

/// `Ok(None)`: the backend offers no one-round-trip checkpoint, or left it
/// to the transaction; else the committed row, with counted steps the
/// updated envelope (for the budget check), and the store's time.
pub(super) fn checkpoint(
    store: &dyn Backend,
    cfg: &Config,
    holder: &WorkerId,
    lease: &Lease,
    text: &str,
    hash: &str,
    steps: i64,
) -> Result<Option<(CheckpointRow, Option<Value>, f64)>> {
    let (hid, fence) = (lease.hid().as_str(), lease.fence());
    let at = cfg.clock.now_iso();
    let max = cfg.max_checkpoints_per_handoff;
    // With steps: the envelope as the transaction would rewrite it. Any
    // problem with it (unreadable, no execution object, over the size
    // limit) is left to the transaction, which reports it in its order.
    let mut env = None;
    let mut bump = |old: &str| -> Option<String> {
        let mut e = json::parse(old).ok()?;
        let ex = exec_mut(&mut e).ok()?;
        crate::budget::add_steps(ex, steps);
        let text = envelope_text(&e, cfg).ok()?;
        env = Some(e);
        Some(text)
    };
    let req = CheckpointReq {
        holder,
        hid,
        fence,
        state_json: text,
        state_hash: hash,
        at: &at,
        max_checkpoints: max,
        bump: if steps > 0 { Some(&mut bump) } else { None },
    };
    let Some(o) = store.checkpoint_once(req)? else {
        return Ok(None);
    };
    let now = o.seen.now;
    let refusal = judge(holder, hid, fence, o.seen).and_then(|()| {
        let seq = o.seq.ok_or_else(|| Error::validation(format!("the store read no next seq for {hid}")))?;
        if seq >= max {
            return Err(Error::Oversize { what: "checkpoint count", size: seq as usize, limit: max as usize });
        }
        Ok(seq)
    });
    match refusal {
        Err(e) if o.inserted => Err(disagree(hid, "checkpoint", e)),
        Err(e) => Err(e),
        Ok(_) if !o.inserted => Ok(None), // left to the transaction
        Ok(seq) if steps > 0 && (o.lease_expires_at.is_none() || env.is_none()) => Err(Error::validation(format!(
            "checkpoint {seq} of {hid} with steps was committed without its envelope or lease update"
        ))),
        Ok(seq) => {
            let row = CheckpointRow { seq, state_json: text.to_string(), state_hash: hash.to_string(), at };
            Ok(Some((row, if steps > 0 { env } else { None }, now)))
        }
    }
}

/// `Ok(None)`: not offered, or left to the generic transaction; else the
/// seconds until the new lease expires.
pub(super) fn heartbeat(store: &dyn Backend, holder: &WorkerId, hid: &str, fence: Fence) -> Result<Option<f64>> {
    let Some(o) = store.heartbeat_once(holder, hid, fence)? else {
        return Ok(None);
    };
    let now = o.seen.now;
    match judge(holder, hid, fence, o.seen) {
        Err(e) if o.lease_expires_at.is_some() => Err(disagree(hid, "heartbeat", e)),
        Err(e) => Err(e),
        Ok(()) => Ok(o.lease_expires_at.map(|at| at - now)),
    }
}
