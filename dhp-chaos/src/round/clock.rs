//! Clock faults at spawn: a seeded share of workers and supervisors run
//! with a faked clock (see [`crate::clock`]).

use super::*;
use crate::clock::Skew;

impl Driver<'_> {
    /// Draw whether this spawn gets a faked clock; if so add the preload to
    /// its environment and return the skew (for its spawn record).
    pub(super) fn clock_env(&mut self, env: &mut Vec<(String, String)>) -> Option<Skew> {
        let lib = self.libfaketime.clone()?;
        if !self.rng_clock.gen_bool(self.cfg.clock.share.clamp(0.0, 1.0)) {
            return None;
        }
        let skew = Skew::draw(&mut self.rng_clock, self.cfg.clock.max_offset_s, self.cfg.clock.max_rate);
        env.push(("LD_PRELOAD".into(), lib.display().to_string()));
        env.push(("FAKETIME".into(), skew.spec()));
        // read FAKETIME on every call, not cached for 10 s
        env.push(("FAKETIME_NO_CACHE".into(), "1".into()));
        Some(skew)
    }
}

/// The skew as the spawn record carries it (`clock`, `faketime`), or nothing.
pub(super) fn spawn_fields(skew: Option<Skew>) -> Value {
    match skew {
        Some(s) => json!({"clock": s, "faketime": s.spec()}),
        None => json!({}),
    }
}
