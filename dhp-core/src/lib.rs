//! # dhp-core — the Durable Handoff Protocol (DHP 1.3) in Rust
//!
//! Agent work that survives worker death. Work is a content-addressed
//! handoff; a worker claims it under a time-bounded lease with a monotonic
//! fencing token and checkpoints as it goes; a leader-elected supervisor
//! orphans a handoff whose lease ran out; any standby recovers it from the
//! last checkpoint. The store, the transport log, the TCP wire and the
//! suspend bundle are byte-compatible with the reference, the Python
//! package `dhp-protocol` 1.3.0, so either implementation continues the
//! other's work.
//!
//! ```
//! use dhp_core::{envelope, runner::Runner, supervisor::Supervisor, Config};
//! use serde_json::json;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let cfg = Config::default();
//! let w1 = Runner::open(dir.path(), "w1", cfg.clone()).unwrap();
//! let env = envelope::build("demo.count", json!({"inline": {"target": 3}}),
//!     json!({"type": "object", "required": ["counted"]}), Default::default()).unwrap();
//! let hid = w1.dispatch(&env).unwrap();
//!
//! let ctx = w1.claim(&hid).unwrap();
//! ctx.checkpoint(&json!({"n": 1})).unwrap();
//! // w1 dies here. Its lease runs out (simulated), the supervisor orphans:
//! dhp_testkit::store::expire_lease(&w1, &hid).unwrap();
//! let sup = Supervisor::open(dir.path(), "sup1", cfg.clone()).unwrap();
//! assert_eq!(sup.scan().unwrap()[0].kind(), dhp_core::supervisor::ActionKind::Orphaned);
//!
//! // Any standby recovers from the last checkpoint; w1's fence is stale now.
//! let w2 = w1.with_id("w2").unwrap();
//! let mut ctx2 = w2.recover(&hid).unwrap();
//! assert_eq!(w2.last_checkpoint(&hid).unwrap(), Some(json!({"n": 1})));
//! assert!(ctx.checkpoint(&json!({"n": 99})).is_err());
//! ctx2.complete(&json!({"counted": 3})).unwrap();
//! ```
//!
//! ## What survives a crash
//! Every operation is one SQLite transaction in WAL mode with
//! `synchronous=FULL`: an operation that returned is on disk; one
//! interrupted by SIGKILL left nothing. A checkpoint that returned is
//! durable locally; it is on the peer host only once shipped (see
//! [`transport`]), and a recovering worker re-ships what the peer lacks.
//!
//! ## What is not here
//!
//! The `dhp` program (its command line, MCP, A2A, the dashboard, the
//! Prometheus endpoint and OTLP export) is the `dhp` crate beside this one;
//! it observes the supervisor and the runner through [`events`] hooks set
//! on [`Config::hooks`]. Test machinery (store helpers that simulate time
//! passing, the build locator, the fuzz bodies) is `dhp-testkit`. This
//! library reads no argv and no environment outside [`Config::from_env`]
//! (and the `failpoints` feature's `DHP_FAILPOINTS`).
//!
//! ## Cargo features
//!
//! - `failpoints` (never default): fault injection from the environment
//!   (`DHP_FAILPOINTS`), for the chaos harness and the tests. Without it a
//!   failpoint is an empty function.

//! ## Identity, checked against the specification
//!
//! The worked example of `docs/PROTOCOL.md` §1.2 and §2.3 (numbers the
//! reference produces):
//!
//! ```
//! use dhp_core::json;
//! use serde_json::json;
//!
//! let inputs = json!({"inline": {"n": 1}});
//! assert_eq!(
//!     json::sha256_hex(&json::canonical(&inputs).unwrap()),
//!     "2102c333f3d7c91b5d34d87f0f6a56a9490293ea7e3420ae0e412ce8dbddec54"
//! );
//! let spec = json!({
//!     "version": "dhp/0.2",
//!     "task": {"kind": "t", "inputs": inputs,
//!              "input_hash": "2102c333f3d7c91b5d34d87f0f6a56a9490293ea7e3420ae0e412ce8dbddec54"},
//!     "contract": {"output_schema": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
//!                  "acceptance": [], "deadline": null,
//!                  "budget": {"max_steps": 100, "max_spend_usd": 10.0, "max_wallclock_s": 3600.0, "max_attempts": 3},
//!                  "max_stall_retries": 2},
//!     "provenance": {"parent_handoff_id": null, "trace_id": "0123456789abcdef",
//!                    "created_by": "dhp/0.1", "created_at": "2026-11-30T10:00:00+00:00"},
//!     "idempotency_key": "k1",
//! });
//! assert_eq!(
//!     json::sha256_hex(&json::canonical(&spec).unwrap()),
//!     "217740d038afbda200105fd31d9362c8f573b8102829b343cfe2be44bd4c9d9f"
//! );
//! // Checkpoint states hash their `sort_keys=True` text, not the canonical one.
//! let state = json!({"page": "Zürich", "n": 2, "f": 1.5e-7, "g": 10.0});
//! assert_eq!(json::dumps_sorted(&state).unwrap(), r#"{"f": 1.5e-07, "g": 10.0, "n": 2, "page": "Z\u00fcrich"}"#);
//! assert_eq!(String::from_utf8(json::canonical(&state).unwrap()).unwrap(), r#"{"f":1.5e-07,"g":10.0,"n":2,"page":"Zürich"}"#);
//! ```

// Library code documents every public item and never unwraps (tests may:
// clippy.toml allows it in `#[cfg(test)]` code).
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]

pub mod budget;
pub mod clock;
pub mod config;
pub mod envelope;
pub mod error;
pub mod events;
mod failpoint;
pub mod id;
pub mod json;
pub mod lease;
pub mod liveness;
pub mod metrics;
mod plain_schema;
pub mod runner;
pub mod status;
pub mod store;
pub mod store_time;
pub mod supervisor;
pub mod transport;

pub use clock::Clock;
pub use config::Config;
pub use error::{Error, Result, StoreErrorKind, TransportKind};
pub use id::{HandoffId, WorkerId};
pub use lease::{Fence, Lease};
pub use runner::{Runner, TaskContext};
pub use status::Status;
pub use store_time::StoreTime;
pub use supervisor::Supervisor;

/// Hit the named failpoint (the `failpoints` feature; a no-op without it).
/// For the `dhp` binary's census worker (`ship.after_commit`), which lives
/// outside this library; not part of the protocol API.
#[doc(hidden)]
pub fn failpoint_hit(name: &str) {
    failpoint::hit(name);
}
