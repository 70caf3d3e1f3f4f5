//! Helpers for tests and harnesses that simulate time passing: what the
//! reference's conformance suite does with raw SQL, behind the store trait.

use crate::envelope::{check_hid, now};
use crate::error::Result;
use crate::runner::Runner;
use crate::store::{with_tx, Leadership, Mode};

/// Move a handoff's lease expiry one second into the past.
pub fn expire_lease(r: &Runner, hid: &str) -> Result<bool> {
    check_hid(hid)?;
    with_tx(r.store().as_ref(), Mode::Write, |tx| match tx.ownership(hid)? {
        Some(mut o) => {
            o.lease_expires_at = now() - 1.0;
            tx.update_ownership(&o, now())
        }
        None => Ok(false),
    })
}

/// Move the leadership expiry into the past (the leader "died").
pub fn expire_leadership(r: &Runner) -> Result<bool> {
    with_tx(r.store().as_ref(), Mode::Write, |tx| match tx.leadership()? {
        Some(l) => {
            tx.put_leadership(&Leadership { expires_at: now() - 1.0, ..l }, now())?;
            Ok(true)
        }
        None => Ok(false),
    })
}

/// The current leader, if any.
pub fn leader(r: &Runner) -> Result<Option<Leadership>> {
    with_tx(r.store().as_ref(), Mode::Read, |tx| tx.leadership())
}
