//! [`Lease`]: the ownership token (handoff id and fence) a worker presents
//! on every fenced write.

use crate::error::Result;
use crate::id::{HandoffId, ToHandoffId};

/// Which handoff, under which fencing token. [`Runner::claim`] and
/// [`Runner::recover`] grant one (inside the [`TaskContext`] they return);
/// every fenced [`Runner`] operation takes one. Holding a `Lease` proves
/// nothing by itself: the store checks holder, fence and expiry in the
/// transaction of each write.
///
/// [`Runner`]: crate::runner::Runner
/// [`Runner::claim`]: crate::runner::Runner::claim
/// [`Runner::recover`]: crate::runner::Runner::recover
/// [`TaskContext`]: crate::runner::TaskContext
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Lease {
    hid: HandoffId,
    fence: i64,
}

impl Lease {
    /// The token of a claim or recovery that just committed.
    pub(crate) fn granted(hid: HandoffId, fence: i64) -> Self {
        Lease { hid, fence }
    }

    /// A token that did not come from this process's claim or recovery: a
    /// fence read from a request, a flag or a stored row, or a stale one
    /// under test. Named so that a reader sees it is not a fresh claim.
    pub fn presented(hid: &(impl ToHandoffId + ?Sized), fence: i64) -> Result<Self> {
        Ok(Lease { hid: hid.to_handoff_id()?, fence })
    }

    /// The handoff this lease is on.
    pub fn hid(&self) -> &HandoffId {
        &self.hid
    }

    /// The fencing token the lease was granted (or presented) with.
    pub fn fence(&self) -> i64 {
        self.fence
    }
}
