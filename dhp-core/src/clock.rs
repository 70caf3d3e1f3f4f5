//! The clock protocol code reads: the store's (default) or a manual one
//! that tests advance instead of sleeping.

use crate::error::Result;
use crate::store::Tx;
use crate::store_time::StoreTime;
use std::sync::{Arc, Mutex, PoisonError};

/// Where protocol time (seconds since the Unix epoch, like
/// [`crate::envelope::now`]) comes from. Lease, leadership, stall, budget
/// and approval times are read in the store transaction that uses them.
#[derive(Clone, Default)]
pub enum Clock {
    /// The store's clock: the local clock for a file store, the database
    /// server's for PostgreSQL (one clock for every process sharing the
    /// store).
    #[default]
    Store,
    /// A clock that moves only when told ([`ManualClock::advance`]); shared
    /// by every clone of the configuration.
    Manual(Arc<ManualClock>),
}

impl Clock {
    /// A manual clock starting at the current wall-clock time, and the
    /// handle that moves it.
    pub fn manual() -> (Clock, Arc<ManualClock>) {
        let m = Arc::new(ManualClock::new(crate::envelope::now()));
        (Clock::Manual(m.clone()), m)
    }

    /// Protocol time inside a transaction.
    pub fn now_in(&self, tx: &mut dyn Tx) -> Result<StoreTime> {
        match self {
            Clock::Store => tx.now(),
            Clock::Manual(m) => Ok(StoreTime::from_secs(m.now())),
        }
    }

    /// Protocol time inside a transaction, read afresh: a store that
    /// answers [`Tx::now`] with the transaction's first reading reads its
    /// clock again ([`Tx::now_fresh`]). For the check that a write's lease
    /// is still live when it commits.
    pub fn fresh_in(&self, tx: &mut dyn Tx) -> Result<StoreTime> {
        match self {
            Clock::Store => tx.now_fresh(),
            Clock::Manual(m) => Ok(StoreTime::from_secs(m.now())),
        }
    }

    /// Protocol time outside a transaction (row timestamps, history).
    pub fn now(&self) -> f64 {
        match self {
            Clock::Store => crate::envelope::now(),
            Clock::Manual(m) => m.now(),
        }
    }

    /// [`Clock::now`] as a store time (row timestamps written without
    /// reading the store's clock).
    pub fn store_time(&self) -> StoreTime {
        StoreTime::from_secs(self.now())
    }

    /// [`Clock::now`] as the reference's ISO-8601 text
    /// ([`crate::envelope::utcnow_iso`]).
    pub fn now_iso(&self) -> String {
        match self {
            Clock::Store => crate::envelope::utcnow_iso(),
            Clock::Manual(m) => crate::envelope::iso_of(m.now()),
        }
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Clock::Store => f.write_str("Clock::Store"),
            Clock::Manual(m) => write!(f, "Clock::Manual({})", m.now()),
        }
    }
}

/// Two configurations agree on the clock when both use the store's or
/// both share one manual clock.
impl PartialEq for Clock {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Clock::Store, Clock::Store) => true,
            (Clock::Manual(a), Clock::Manual(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// A clock for tests: reads what it was set to.
#[derive(Debug)]
pub struct ManualClock {
    t: Mutex<f64>,
}

impl ManualClock {
    /// A clock standing at `t` (seconds since the epoch) until moved.
    pub fn new(t: f64) -> Self {
        ManualClock { t: Mutex::new(t) }
    }

    /// The time it stands at, in seconds since the epoch.
    pub fn now(&self) -> f64 {
        *self.t.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Move the clock forward by `secs` (a negative `secs` moves it back,
    /// as a clock step would).
    pub fn advance(&self, secs: f64) {
        *self.t.lock().unwrap_or_else(PoisonError::into_inner) += secs;
    }

    /// Put the clock at `t` (seconds since the epoch).
    pub fn set(&self, t: f64) {
        *self.t.lock().unwrap_or_else(PoisonError::into_inner) = t;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told_and_clones_share_it() {
        let (clock, hand) = Clock::manual();
        let other = clock.clone();
        let t0 = clock.now();
        assert_eq!(other.now(), t0);
        hand.advance(10.5);
        assert_eq!(other.now(), t0 + 10.5);
        hand.set(1_000_000_000.25);
        assert_eq!(clock.now_iso(), "2001-09-09T01:46:40.250000+00:00");
        assert_eq!(clock, other);
        assert_ne!(clock, Clock::Store);
    }
}
