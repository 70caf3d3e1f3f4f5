//! # dhp-conform — conformance runner for DHP 1.3 implementations
//!
//! An implementation is reached through an *adapter*: a process that
//! speaks JSON lines on stdin/stdout (see `ADAPTERS.md`, the schemas in
//! `spec/adapter/` and their types in `dhp-adapter-proto`). The runner checks the reference's ten assertions, an
//! extended level and a cross-implementation level against it, through the
//! adapter and — for implementations on the standard store — by reading
//! the SQLite file and transport logs itself.
//!
//! Outcomes are *passed*, *failed* (the implementation broke a guarantee),
//! *errored* (the adapter crashed, hung, printed garbage, answered the
//! wrong id or an invalid reply: no verdict) and *skipped* (an optional
//! feature the adapter does not declare).
//!
//! The assertions, in the order they run (the reference's ten first); each
//! is linked from the rule it checks in `docs/PROTOCOL.md` §14:
//!
//! ```
//! let all = dhp_conform::assertions::all();
//! let names: Vec<&str> = all.iter().map(|a| a.name).collect();
//! assert_eq!(&names[..3], &["no-lost-results", "no-crossed-inputs", "no-untyped-results"]);
//! assert!(names.contains(&"fencing") && names.contains(&"canonical-vectors"));
//! ```
//!
//! The command line (`dhp-conform`, `dhp-conform --impl reference`,
//! `dhp-conform --compare ours reference`) is described in the crate's
//! README.

// Library code documents every public item and never unwraps (tests may:
// clippy.toml allows it in `#[cfg(test)]` code).
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]

pub mod assertions;
pub mod catalogue;
pub mod cgroup;
pub mod check;
pub mod cli;
pub mod client;
pub mod error;
pub mod expect;
pub mod explore;
pub mod fuzzing;
pub mod locate;
pub(crate) mod ops;
pub mod pgroup;
pub mod protocol;
pub mod report;
pub mod store_view;
pub mod stores;
pub mod suite;
pub mod write_lock;

pub use check::{Check, Fail};
pub use error::Error;
pub use suite::{Impl, Level, Options, Outcome};
