//! The workload the harnesses run, kept out of the protocol library
//! (dhp-core): DHP does not know what a task computes, and the chaos
//! checker's bookkeeping is not part of the protocol.
//!
//! - [`census`]: the `prime.census` task kind — count and sum the primes in
//!   `[lo, hi)`, one checkpoint per chunk. The reference's chaos harness
//!   uses it, `dhp work` and `dhp a2a --workers` run it, and a foreign
//!   worker under dhp-chaos computes it (dhp-chaos/CONTRACT.md).
//! - [`history`]: the optional operation-history lines a worker or
//!   supervisor may write for dhp-chaos (spec/chaos/history.schema.json).
//!   The checker treats them as detail, never as proof.
//! - [`client`]: what the client of dhp-chaos's workload service (which
//!   serves each chunk's count and sum and records who asked for it) and
//!   the service agree on; the client is the crate dhp-workload-client.

pub mod census;
pub mod client;
pub mod error;
pub mod history;

pub use error::{Error, Result, ServiceFailure};
