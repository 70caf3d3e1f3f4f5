//! The invariants a round must keep, one file each. Each reads the
//! round's [`Ctx`] and returns its [`Findings`]; [`super::check_round`]
//! files them (taint) into the report's verdicts.

mod async_lag;
mod budget;
mod checkpoints;
mod converge;
mod descriptors;
mod detection;
mod durable_acks;
mod exactly_once;
mod failover;
mod fencing;
mod fencing_audit;
mod lost_commits;
mod lost_failover;
mod model;
mod no_false_orphans;
mod one_leader;
mod outcome;
mod peer_acks;
pub(crate) mod peer_log;
mod result;
mod rework;
mod served_work;
mod store_full;
mod stuck_after_restart;
mod sync_ack;
mod transport;
pub(crate) mod transport_links;
mod zombies;

pub use descriptors::{Descriptor, Mutant, MutantProgram, DESCRIPTORS};

/// `dhp-chaos list`: the invariants as text, JSON and the documents' tables.
pub mod list {
    pub use super::descriptors::{json, markdown, sources_markdown, text};
}
pub(crate) use outcome::dlq_park;
pub(crate) use peer_acks::indeterminate;
pub(crate) use rework::redone;
pub(crate) use zombies::tally as zombie_tally;
pub(crate) use zombies::woken_replaced;

use super::ctx::Ctx;
use super::findings::Findings;

/// An invariant of a chaos round; what it is, checks and needs is its
/// [`Descriptor`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Invariant {
    /// Declared in [`DESCRIPTORS`].
    Outcome,
    /// Declared in [`DESCRIPTORS`].
    Result,
    /// Declared in [`DESCRIPTORS`].
    ExactlyOnce,
    /// Declared in [`DESCRIPTORS`].
    Checkpoints,
    /// Declared in [`DESCRIPTORS`].
    Fencing,
    /// Declared in [`DESCRIPTORS`].
    Zombies,
    /// Declared in [`DESCRIPTORS`].
    Transport,
    /// Declared in [`DESCRIPTORS`].
    Rework,
    /// Declared in [`DESCRIPTORS`].
    Detection,
    /// Declared in [`DESCRIPTORS`].
    NoFalseOrphans,
    /// Declared in [`DESCRIPTORS`].
    SyncAck,
    /// Declared in [`DESCRIPTORS`].
    Converge,
    /// Declared in [`DESCRIPTORS`].
    Failover,
    /// Declared in [`DESCRIPTORS`].
    NoLostCommitsAcrossDbCrash,
    /// Declared in [`DESCRIPTORS`].
    NoStuckAfterDbRestart,
    /// Declared in [`DESCRIPTORS`].
    PeerAcks,
    /// Declared in [`DESCRIPTORS`].
    AsyncLag,
    /// Declared in [`DESCRIPTORS`].
    NoTornAfterStoreFull,
    /// Declared in [`DESCRIPTORS`].
    OneLeader,
    /// Declared in [`DESCRIPTORS`].
    Budget,
    /// Declared in [`DESCRIPTORS`].
    ServedWork,
    /// Declared in [`DESCRIPTORS`].
    Model,
    /// Declared in [`DESCRIPTORS`].
    DurableAcks,
}

impl Invariant {
    /// Every invariant, in the order the report lists them.
    pub const ALL: [Invariant; 23] = [
        Invariant::Outcome,
        Invariant::Result,
        Invariant::ExactlyOnce,
        Invariant::Checkpoints,
        Invariant::Fencing,
        Invariant::Zombies,
        Invariant::Transport,
        Invariant::Rework,
        Invariant::Detection,
        Invariant::NoFalseOrphans,
        Invariant::SyncAck,
        Invariant::Converge,
        Invariant::Failover,
        Invariant::NoLostCommitsAcrossDbCrash,
        Invariant::NoStuckAfterDbRestart,
        Invariant::PeerAcks,
        Invariant::AsyncLag,
        Invariant::NoTornAfterStoreFull,
        Invariant::OneLeader,
        Invariant::Budget,
        Invariant::ServedWork,
        Invariant::Model,
        Invariant::DurableAcks,
    ];

    /// Its declaration ([`DESCRIPTORS`]).
    pub fn descriptor(self) -> &'static Descriptor {
        // DESCRIPTORS is in ALL order, which is the enum's (a unit test checks both)
        &DESCRIPTORS[self as usize]
    }

    /// The name reports, JSON output and saved reports use.
    pub fn name(self) -> &'static str {
        self.descriptor().name
    }

    /// The invariant's name as written in reports.
    pub fn from_name(name: &str) -> Option<Invariant> {
        Invariant::ALL.into_iter().find(|i| i.name() == name)
    }

    /// `--allow-unchecked NAME,…`: every name an invariant's (or `all`).
    pub fn parse_allowed(names: &[String]) -> crate::error::Result<Vec<String>> {
        for n in names {
            if n != "all" && Invariant::from_name(n).is_none() {
                let known: Vec<&str> = Invariant::ALL.iter().map(|i| i.name()).collect();
                return Err(crate::Error::Usage(format!(
                    "--allow-unchecked: unknown invariant {n:?} (one of: all, {})",
                    known.join(", ")
                )));
            }
        }
        Ok(names.to_vec())
    }

    /// The sources it needs and those it uses for detail ([`super::sources::needs`]).
    pub fn sources(self) -> (&'static [super::Source], &'static [super::Source]) {
        super::sources::needs(self)
    }

    /// What it promises (the report's `what`).
    pub fn doc(self) -> &'static str {
        self.descriptor().what
    }

    /// Check the round.
    pub fn check(self, cx: &Ctx<'_>) -> Findings {
        (self.descriptor().check)(cx)
    }
}
