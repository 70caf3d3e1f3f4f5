//! # dhp-adapter — dhp-rs under test
//!
//! The adapter through which `dhp-conform` judges dhp-core (ADAPTERS.md):
//! a process that reads one JSON request per line on stdin and answers one
//! JSON reply per line on stdout. It lives outside the judge, like every
//! other implementation's adapter: dhp-conform talks to it only over the
//! adapter protocol and does not link dhp-core.
//!
//! - [`adapter`]: the real adapter (the `dhp-adapter` binary, what
//!   `dhp-conform --impl ours` runs); an example for implementers.
//! - [`mutants`]: the same adapter with one guarantee removed each (the
//!   `dhp-mutant-adapter` binary), which prove that every assertion can fail.

#![warn(clippy::unwrap_used)]

pub mod adapter;
pub mod mutants;
mod pg;
