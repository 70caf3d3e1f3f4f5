//! Helpers for tests and harnesses that simulate time passing: what the
//! reference's conformance suite does with raw SQL, behind the store trait.
//! Test machinery, not protocol: it left dhp-core (issue 46).

use dhp_core::envelope::check_hid;
use dhp_core::error::Result;
use dhp_core::runner::Runner;
use dhp_core::store::{with_tx, Leadership, Mode};

/// Move a handoff's lease expiry one second into the past.
pub fn expire_lease(r: &Runner, hid: &str) -> Result<bool> {
    check_hid(hid)?;
    with_tx(r.store().as_ref(), Mode::Write, |tx| match tx.ownership(hid)? {
        Some(mut o) => {
            let t = r.config().clock.now_in(tx)?;
            o.lease_expires_at = (t - 1.0).secs();
            tx.update_ownership(&o, t)
        }
        None => Ok(false),
    })
}

/// Move the leadership expiry into the past (the leader "died").
pub fn expire_leadership(r: &Runner) -> Result<bool> {
    with_tx(r.store().as_ref(), Mode::Write, |tx| match tx.leadership()? {
        Some(l) => {
            let t = r.config().clock.now_in(tx)?;
            tx.put_leadership(&Leadership { expires_at: (t - 1.0).secs(), ..l }, t)?;
            Ok(true)
        }
        None => Ok(false),
    })
}

/// The current leader, if any.
pub fn leader(r: &Runner) -> Result<Option<Leadership>> {
    with_tx(r.store().as_ref(), Mode::Read, |tx| tx.leadership())
}
