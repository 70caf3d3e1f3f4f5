//! DHP as an executable model (issue 43).
//!
//! - [`state`]: the protocol's state — handoffs, ownership, checkpoints,
//!   leadership, DLQ, approvals, effects — on an integer clock.
//! - [`ops`]: every operation, one function each, with its preconditions,
//!   its effect and the docs/PROTOCOL.md rule it encodes; a refused
//!   operation returns the spec's error kind ([`ops::OpError`]) and
//!   changes nothing.
//! - [`judge`]: replays a store's audited row changes (dhp-chaos's audit)
//!   through the model; every committed change must be the effect of a
//!   legal operation.
//! - [`check`]: the stateright model of workers and supervisors, checked
//!   exhaustively for small bounds.
//!
//! Deliberately independent of dhp-core: it judges dhp-core's writes.

mod error;
pub mod judge;

pub use error::Error;
pub mod check;
pub mod ops;
pub mod rules;
pub mod state;
