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
    fence: Fence,
}

/// A fencing token: the `fence` of an ownership row, one more with every
/// claim or recovery (docs/PROTOCOL.md §5), so a writer holding an older
/// one is refused. Stored and shipped as the same integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Fence(i64);

impl Fence {
    /// The token of a first claim.
    pub const FIRST: Fence = Fence(0);

    /// The token with this stored value.
    pub const fn new(value: i64) -> Self {
        Fence(value)
    }

    /// The stored value.
    pub const fn get(self) -> i64 {
        self.0
    }

    /// The token that fences this one out (the next claim or recovery).
    /// Saturates: a store that reached `i64::MAX` refuses further writers
    /// rather than wrapping to a token older than every other.
    #[must_use]
    pub const fn next(self) -> Fence {
        Fence(self.0.saturating_add(1))
    }
}

impl From<i64> for Fence {
    fn from(value: i64) -> Self {
        Fence(value)
    }
}

impl From<Fence> for i64 {
    fn from(f: Fence) -> i64 {
        f.0
    }
}

impl std::fmt::Display for Fence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl Lease {
    /// The token of a claim or recovery that just committed.
    pub(crate) fn granted(hid: HandoffId, fence: Fence) -> Self {
        Lease { hid, fence }
    }

    /// A token that did not come from this process's claim or recovery: a
    /// fence read from a request, a flag or a stored row, or a stale one
    /// under test. Named so that a reader sees it is not a fresh claim.
    pub fn presented(hid: &(impl ToHandoffId + ?Sized), fence: impl Into<Fence>) -> Result<Self> {
        Ok(Lease { hid: hid.to_handoff_id()?, fence: fence.into() })
    }

    /// The handoff this lease is on.
    pub fn hid(&self) -> &HandoffId {
        &self.hid
    }

    /// The fencing token the lease was granted (or presented) with.
    pub fn fence(&self) -> Fence {
        self.fence
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fence_is_the_stored_integer_and_next_fences_it_out() {
        let f = Fence::new(41);
        assert_eq!(f.next().get(), 42);
        assert!(f.next() > f && Fence::FIRST < f);
        assert_eq!(Fence::new(i64::MAX).next(), Fence::new(i64::MAX), "saturates, never wraps below");
        assert_eq!(serde_json::json!({"fence": f}).to_string(), r#"{"fence":41}"#);
        assert_eq!(serde_json::from_str::<Fence>("7").unwrap(), Fence::from(7));
        assert_eq!(f.to_string(), "41");
        let lease = Lease::presented(&"ab".repeat(32), 3).unwrap();
        assert_eq!(i64::from(lease.fence()), 3);
    }
}
