//! Helpers for tests and harnesses that simulate time passing: what the
//! reference's conformance suite does with raw SQL, behind the store trait.

use crate::envelope::check_hid;
use crate::error::Result;
use crate::runner::Runner;
use crate::store::{with_tx, Leadership, Mode};

/// Move a handoff's lease expiry one second into the past.
pub fn expire_lease(r: &Runner, hid: &str) -> Result<bool> {
    check_hid(hid)?;
    with_tx(r.store().as_ref(), Mode::Write, |tx| match tx.ownership(hid)? {
        Some(mut o) => {
            let t = r.config().clock.now_in(tx)?;
            o.lease_expires_at = t - 1.0;
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
            tx.put_leadership(&Leadership { expires_at: t - 1.0, ..l }, t)?;
            Ok(true)
        }
        None => Ok(false),
    })
}

/// The current leader, if any.
pub fn leader(r: &Runner) -> Result<Option<Leadership>> {
    with_tx(r.store().as_ref(), Mode::Read, |tx| tx.leadership())
}

/// The repository root (the workspace directory), found at run time
/// ([`crate::locate::checkout`]). Panics with the fix when there is none:
/// tests never skip.
pub fn repo_root() -> std::path::PathBuf {
    crate::locate::checkout().unwrap_or_else(|e| panic!("{e}"))
}

/// The Python interpreter that has the reference (`dhp-protocol==1.3.0`):
/// `$DHP_PYTHON`, else `<repo>/.venv/bin/python` made by `scripts/setup.sh`
/// ([`crate::locate::python`]). Panics with the fix if neither exists:
/// interop tests never skip.
pub fn python() -> std::path::PathBuf {
    crate::locate::python(None).unwrap_or_else(|e| panic!("{e}"))
}
