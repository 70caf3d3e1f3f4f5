//! Clock faults: processes started with libfaketime preloaded
//! (`LD_PRELOAD` + `FAKETIME="+OFFSETs xRATE"`), so their wall clock —
//! `clock_gettime`, which every `dhp` binary and the Python reference read —
//! runs ahead or behind by a seeded offset and at a seeded rate. The
//! library is preloaded directly rather than through `faketime(1)`, which
//! forks: the harness must signal the process itself.
//!
//! A faked process writes its history in its own time; [`Skew::real_time`]
//! converts back (libfaketime's clock is `start + offset + rate × (now − start)`).

use crate::error::{Error, Result};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// libfaketime's shared object (`$DHP_CHAOS_LIBFAKETIME`, or the usual
/// install locations); an error that says how to install it otherwise.
pub fn libfaketime() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("DHP_CHAOS_LIBFAKETIME") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
        return Err(Error::Config {
            setting: "DHP_CHAOS_LIBFAKETIME",
            value: p.display().to_string(),
            problem: "is not a file",
        });
    }
    if let Some(p) = dhp_kit::faketime::find_library() {
        return Ok(p);
    }
    Err(Error::Environment {
        problem: format!(
            "clock faults need libfaketime, which was not found (searched {}): install the Debian package \
             `faketime` (scripts/services.sh installs it, as root) or set DHP_CHAOS_LIBFAKETIME",
            dhp_kit::faketime::LIB_DIRS.join(", ")
        ),
    })
}

/// One process's faked clock.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Skew {
    /// Seconds ahead (negative: behind) at start.
    pub offset_s: f64,
    /// Seconds of its clock per real second.
    pub rate: f64,
}

impl Skew {
    /// A seeded skew: offset uniform in ±`max_offset_s`, rate log-uniform in
    /// [1/`max_rate`, `max_rate`].
    pub fn draw(rng: &mut impl Rng, max_offset_s: f64, max_rate: f64) -> Skew {
        let offset_s = if max_offset_s > 0.0 { rng.gen_range(-max_offset_s..=max_offset_s) } else { 0.0 };
        let l = max_rate.max(1.0).ln();
        let rate = if l > 0.0 { rng.gen_range(-l..=l).exp() } else { 1.0 };
        Skew { offset_s, rate }
    }

    /// The `FAKETIME` value: `+3.250s x1.100000`.
    pub fn spec(&self) -> String {
        format!("{:+.3}s x{:.6}", self.offset_s, self.rate)
    }

    /// Real time of a timestamp `t` this process read from its clock, given
    /// the real time it started (the harness's spawn record; libfaketime
    /// starts the clock a few ms later, an error of `delay × |1 − 1/rate|`).
    pub fn real_time(&self, started: f64, t: f64) -> f64 {
        started + (t - started - self.offset_s) / self.rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn draws_stay_in_range_and_invert() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for _ in 0..200 {
            let s = Skew::draw(&mut rng, 5.0, 1.5);
            assert!(s.offset_s.abs() <= 5.0 && s.rate >= 1.0 / 1.5 - 1e-9 && s.rate <= 1.5 + 1e-9, "{s:?}");
            let (start, real) = (1000.0, 1012.5);
            let faked = start + s.offset_s + s.rate * (real - start);
            assert!((s.real_time(start, faked) - real).abs() < 1e-9);
        }
        assert_eq!(Skew { offset_s: 3600.0, rate: 1.5 }.spec(), "+3600.000s x1.500000");
    }
}
