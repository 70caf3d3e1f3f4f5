//! Named scenarios (`--scenario NAME`): a fixed, seeded fault script
//! instead of the injector's random mix, checked by the same checker.
//!
//! - `net-chaos`: the reference README's network chaos claim ("SIGKILLs
//!   workers mid-ship across rounds: 24/24 checkpoints land on the peer,
//!   zero rework"), reconstructed — see [`net_chaos`] and docs/chaos/net-chaos.md.

pub mod net_chaos;
mod net_procs;
mod net_report;
mod relay;

pub use net_chaos::{run, Options};
pub use net_report::reanalyze;
pub use relay::Moment;

use crate::error::{Error, Result};

/// A named scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// Workers SIGKILLed mid-ship, round after round; what landed on the peer.
    NetChaos,
}

impl Scenario {
    /// Parses a `--scenario` value.
    pub fn parse(s: &str) -> Result<Scenario> {
        match s {
            "net-chaos" => Ok(Scenario::NetChaos),
            _ => Err(Error::Usage(format!("unknown scenario {s:?} (known: net-chaos)"))),
        }
    }
}
