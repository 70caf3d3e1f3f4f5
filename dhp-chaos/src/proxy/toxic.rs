//! The Toxiproxy vocabulary: what a link fault does to the bytes, and the
//! seeded draw of one.

use rand::Rng;
use serde::{Deserialize, Serialize};

/// One link fault, active on every connection through the proxy until it
/// is cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "toxic", rename_all = "kebab-case")]
pub enum Toxic {
    /// Every chunk is delayed by `ms` plus a uniform `0..=jitter_ms`, both directions.
    Latency {
        /// The fixed delay, milliseconds.
        ms: u64,
        /// The largest extra delay, milliseconds.
        jitter_ms: u64,
    },
    /// At most `bytes_per_s` per direction and connection.
    Bandwidth {
        /// The cap, bytes per second.
        bytes_per_s: u64,
    },
    /// Nothing is forwarded (the bytes wait in the kernel buffers, as under
    /// a partition); after `timeout_ms` (0: never) the connection is closed.
    Blackhole {
        /// Milliseconds until the connection is closed (0: never).
        timeout_ms: u64,
    },
    /// Open connections are reset (RST) and new ones reset on accept.
    Reset,
    /// When one side closes, the other side's close is delayed by `ms`.
    SlowClose {
        /// The delay, milliseconds.
        ms: u64,
    },
    /// A connection is cut (both directions closed) once `bytes` more bytes
    /// crossed it, in either direction — mid-frame as often as not.
    CutAfter {
        /// Bytes that still cross before the cut.
        bytes: u64,
    },
}

impl Toxic {
    /// The toxic's name (as in the history and the timeline).
    pub fn name(&self) -> &'static str {
        match self {
            Toxic::Latency { .. } => "latency",
            Toxic::Bandwidth { .. } => "bandwidth",
            Toxic::Blackhole { .. } => "blackhole",
            Toxic::Reset => "reset",
            Toxic::SlowClose { .. } => "slow-close",
            Toxic::CutAfter { .. } => "cut-after",
        }
    }

    /// A seeded toxic with parameters in ranges that stress DHP's timings
    /// (lease 0.2 s × 3, ship timeouts of seconds) without stalling a round.
    pub fn draw(rng: &mut impl Rng) -> Toxic {
        match rng.gen_range(0..6u8) {
            0 => Toxic::Latency { ms: rng.gen_range(5..=150), jitter_ms: rng.gen_range(0..=100) },
            1 => Toxic::Bandwidth { bytes_per_s: rng.gen_range(200..=20_000) },
            2 => Toxic::Blackhole { timeout_ms: if rng.gen_bool(0.5) { 0 } else { rng.gen_range(100..=1500) } },
            3 => Toxic::Reset,
            4 => Toxic::SlowClose { ms: rng.gen_range(50..=1000) },
            _ => Toxic::CutAfter { bytes: rng.gen_range(0..=600) },
        }
    }
}
