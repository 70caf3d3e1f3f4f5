//! Checkpoint and heartbeat as one round trip on backends that run the
//! whole transaction server-side ([`Backend::checkpoint_once`],
//! [`Backend::heartbeat_once`]: PostgreSQL). The backend reports what it
//! read under the handoff's lock; the checks here are the transactions'
//! own ([`super::owner_checks`], [`super::running_check`]), so a refusal is
//! the same typed error either way. The backend wrote only if those checks
//! pass, so a refusal left the store unchanged.

use super::{owner_checks, running_check};
use crate::config::Config;
use crate::envelope::utcnow_iso;
use crate::error::{Error, Result};
use crate::store::{Backend, OwnerSeen};

fn judge(holder: &str, hid: &str, fence: i64, seen: OwnerSeen) -> Result<()> {
    owner_checks(holder, hid, fence, seen.ownership, seen.now)?;
    running_check(hid, seen.status)
}

/// The backend wrote although the checks refuse: never expected (the
/// server-side checks are these); said loudly rather than hidden.
fn disagree(hid: &str, op: &str, refusal: Error) -> Error {
    Error::Validation(format!("{op} of {hid} was committed by the store although the runner refuses it: {refusal}"))
}

/// `Ok(None)`: the backend offers no one-round-trip checkpoint.
pub(super) fn checkpoint(
    store: &dyn Backend,
    cfg: &Config,
    holder: &str,
    hid: &str,
    fence: i64,
    text: &str,
    hash: &str,
) -> Result<Option<i64>> {
    let at = utcnow_iso();
    let max = cfg.max_checkpoints_per_handoff;
    let Some(o) = store.checkpoint_once(holder, hid, fence, text, hash, &at, max)? else {
        return Ok(None);
    };
    let refusal = judge(holder, hid, fence, o.seen).and_then(|()| {
        let seq = o.seq.ok_or_else(|| Error::Validation(format!("the store read no next seq for {hid}")))?;
        if seq >= max {
            return Err(Error::Oversize { what: "checkpoint count", size: seq as usize, limit: max as usize });
        }
        if !o.inserted {
            return Err(Error::OwnershipLost { hid: hid.to_string(), reason: format!("checkpoint seq {seq} taken") });
        }
        Ok(seq)
    });
    match refusal {
        Err(e) if o.inserted => Err(disagree(hid, "checkpoint", e)),
        r => r.map(Some),
    }
}

/// `Ok(None)`: not offered, or left to the generic transaction; else the
/// seconds until the new lease expires.
pub(super) fn heartbeat(store: &dyn Backend, holder: &str, hid: &str, fence: i64) -> Result<Option<f64>> {
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
