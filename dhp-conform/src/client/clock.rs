//! The runner's clock for one assertion (feature `clock-control`): real
//! time plus an offset that only grows. Every request to a process that
//! follows it carries the offset as `clock_offset_s`, so all processes of
//! the assertion agree on the time, whichever of them was asked last.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Seconds the runner has moved time on, shared by the assertion's
/// context and every adapter process it handed out.
#[derive(Debug, Clone, Default)]
pub struct ClockOffset(Arc<AtomicU64>);

impl ClockOffset {
    /// The offset, in seconds (0 until moved).
    pub fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::SeqCst))
    }

    /// Move time on by `secs` (a negative or non-finite `secs` is ignored:
    /// this clock never goes back).
    pub fn advance(&self, secs: f64) {
        if secs.is_finite() && secs > 0.0 {
            let _ =
                self.0.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |b| Some((f64::from_bits(b) + secs).to_bits()));
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_offset_only_grows_and_is_shared() {
        let c = super::ClockOffset::default();
        let d = c.clone();
        assert_eq!(c.get(), 0.0);
        c.advance(2.5);
        c.advance(-10.0);
        c.advance(f64::NAN);
        assert_eq!(d.get(), 2.5);
    }
}
