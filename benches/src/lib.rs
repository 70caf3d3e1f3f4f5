//! # dhp-benches — benchmarks of dhp-core, and the comparison with the reference
//!
//! - `benches/benches/*.rs`: criterion benchmarks (`cargo bench -p dhp-benches`).
//!   Under `cargo test --benches` each runs once with small sizes.
//! - `benches/compare.sh`: one command that measures the same operations on
//!   dhp-core (the `dhp-bench` binary of this crate) and on the reference
//!   Python package dhp-protocol 1.3.0 (`benches/ref_bench.py`) and prints a
//!   Markdown table of rates, ratios and targets (`benches/RESULTS.md`).
//!
//! The library holds what both share: fixtures ([`fixture`]), timing and
//! machine probes ([`measure`]), the group-commit path ([`group`]), the
//! comparison's operations ([`suite`]), the TCP server/shipper beds ([`tcp`])
//! and the report ([`report`]).
//!
//! The report is computed from the result files, never typed in:
//!
//! ```
//! use serde_json::json;
//! let ours = json!({"ops": {"dispatch": {"rate": 900.0, "unit": "ops/s"}}});
//! let reference = json!({"ops": {"dispatch": {"rate": 300.0}}});
//! let md = dhp_benches::report::markdown(&ours, &reference, &json!({}), &json!({}), "example");
//! assert!(md.contains("| 900 | 300 | 3.00× |"));
//! ```

// Library code documents every public item and never unwraps (tests may:
// clippy.toml allows it in `#[cfg(test)]` code).
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]

pub mod fixture;
pub mod group;
pub mod measure;
pub mod pg;
pub mod pg_call;
pub mod pg_limit;
pub mod pg_rounds;
pub mod report;
pub mod scale;
pub mod suite;
pub mod tcp;
pub mod tcp_bound;
pub mod tcp_rates;
pub mod tcp_soak;
pub mod tcp_sync;

/// True when a criterion bench binary runs as a benchmark (`cargo bench`
/// passes `--bench`); false under `cargo test --benches`, where each bench
/// function runs once and set-ups must stay small.
pub fn bench_mode() -> bool {
    std::env::args().any(|a| a == "--bench")
}
