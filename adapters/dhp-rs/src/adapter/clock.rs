//! Feature `clock-control` (ADAPTERS.md §2, §3): a request may carry
//! `clock_offset_s`, and while the adapter answers it dhp-core's protocol
//! clock reads real time plus that offset. The runner moves time forward
//! that way instead of sleeping through leases, stalls, wall-clock budgets
//! and approval timeouts.
//!
//! dhp-core's [`ManualClock`] stands still until moved, but an operation
//! may wait while time passes (`await_approval` polls an approval until it
//! expires), so a ticker thread keeps the manual clock at real time plus
//! the offset while a request is being answered. Every move of the clock
//! happens under one lock and reads the real clock there: the clock never
//! goes back while an offset holds, and at the start of a request it reads
//! no earlier than the instant the request arrived.

use dhp_core::clock::{Clock, ManualClock};
use dhp_core::envelope::now;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// How often the ticker moves the clock while a request is answered.
const TICK: Duration = Duration::from_millis(1);

#[derive(Debug, Default)]
struct State {
    offset: f64,
    busy: bool,
}

#[derive(Debug)]
struct Shared {
    hand: Arc<ManualClock>,
    state: Mutex<State>,
    wake: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A protocol clock that reads real time plus an offset the runner sets.
#[derive(Debug)]
pub(crate) struct OffsetClock {
    shared: Arc<Shared>,
}

impl OffsetClock {
    /// The clock (for [`dhp_core::Config::clock`]) and its control; starts
    /// the ticker, which sleeps while no request is being answered.
    pub(crate) fn start() -> (Clock, OffsetClock) {
        let (clock, hand) = Clock::manual();
        let shared = Arc::new(Shared { hand, state: Mutex::default(), wake: Condvar::new() });
        let ticker = shared.clone();
        std::thread::spawn(move || loop {
            {
                let mut st = ticker.lock();
                while !st.busy {
                    st = ticker.wake.wait(st).unwrap_or_else(PoisonError::into_inner);
                }
                ticker.hand.set(now() + st.offset);
            }
            std::thread::sleep(TICK);
        });
        (clock, OffsetClock { shared })
    }

    /// A request starts: from now on, until [`OffsetClock::idle`], the
    /// clock reads real time plus `offset` seconds.
    pub(crate) fn begin(&self, offset: f64) {
        let mut st = self.shared.lock();
        st.offset = offset;
        st.busy = true;
        self.shared.hand.set(now() + offset);
        self.shared.wake.notify_all();
    }

    /// The request was answered: the ticker rests.
    pub(crate) fn idle(&self) {
        self.shared.lock().busy = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_reads_real_time_plus_the_offset_and_moves_while_busy() {
        let (clock, ctl) = OffsetClock::start();
        let t0 = now();
        ctl.begin(200.0);
        let a = clock.now();
        assert!(a >= t0 + 200.0 && a < now() + 200.0 + 0.001, "{a} vs {t0}");
        std::thread::sleep(Duration::from_millis(50));
        let b = clock.now();
        assert!(b >= a + 0.03, "the clock must move while a request is answered: {a} -> {b}");
        ctl.idle();
        ctl.begin(0.0);
        let c = clock.now();
        assert!((c - now()).abs() < 0.01, "offset 0 reads real time: {c}");
        ctl.idle();
    }
}
