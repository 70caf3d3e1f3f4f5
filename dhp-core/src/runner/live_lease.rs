//! A worker's write needs a live lease when it commits, not only when its
//! transaction checked it.
//!
//! The lease is checked at the start of the write transaction, and the
//! transaction then reads, stamps and writes. A process stopped (SIGSTOP, a
//! long scheduling gap) between that check and its commit holds the store's
//! write lock all the while, so no supervisor can orphan the handoff in
//! between — but its rows would carry times after the lease ran out, a write
//! that the protocol forbids (§5.2) and that the chaos harness's model
//! invariant caught (a SQLite worker stopped for 2 s inside a steps
//! checkpoint committed it 28 ms after its lease). So every such write reads
//! the clock once more after its last stamp and rolls back with
//! [`Error::LeaseLost`] if the lease it relied on ran out meanwhile: every
//! stamp it commits is then no later than the lease.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::store::Tx;

/// A lease checked inside a write transaction: the handoff and when the
/// lease the check saw runs out.
#[must_use = "a write that relied on a lease must call LiveLease::still_live before it commits"]
#[derive(Debug)]
pub(super) struct LiveLease<'a> {
    hid: &'a str,
    until: f64,
}

impl<'a> LiveLease<'a> {
    pub(super) fn new(hid: &'a str, until: f64) -> Self {
        LiveLease { hid, until }
    }

    /// The last step of the write: the lease is still live by the clock read
    /// now, after every stamp of the transaction; else [`Error::LeaseLost`]
    /// (the transaction rolls back).
    pub(super) fn still_live(&self, tx: &mut dyn Tx, cfg: &Config) -> Result<()> {
        let t = cfg.clock.fresh_in(tx)?.secs();
        if self.until < t {
            return Err(Error::LeaseLost { hid: self.hid.to_string(), expired_ago_s: t - self.until });
        }
        Ok(())
    }

    /// Only for reads, which commit nothing.
    pub(super) fn read_only(self) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Clock;
    use crate::store::{mem::MemStore, with_tx, Mode};

    #[test]
    fn a_lease_that_ran_out_after_its_check_refuses_the_commit() {
        let (clock, hand) = Clock::manual();
        let cfg = Config { clock, ..Config::default() };
        let store = MemStore::new();
        let until = hand.now() + 1.0;
        let r = with_tx(&store, Mode::Write, |tx| {
            let live = LiveLease::new("h", until);
            live.still_live(tx, &cfg)?;
            hand.advance(0.5);
            live.still_live(tx, &cfg)?; // still before the end
            hand.advance(0.6);
            live.still_live(tx, &cfg)
        });
        match r {
            Err(Error::LeaseLost { hid, expired_ago_s }) => {
                assert_eq!(hid, "h");
                assert!((expired_ago_s - 0.1).abs() < 1e-6, "{expired_ago_s}");
            }
            other => panic!("a lease past its end at commit is lost: {other:?}"),
        }
    }

    #[test]
    fn a_lease_ending_exactly_now_is_still_live() {
        let (clock, hand) = Clock::manual();
        let cfg = Config { clock, ..Config::default() };
        let store = MemStore::new();
        let until = hand.now();
        with_tx(&store, Mode::Write, |tx| LiveLease::new("h", until).still_live(tx, &cfg)).unwrap();
    }
}
