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
//! dhp_core::testing::expire_lease(&w1, &hid).unwrap();
//! let sup = Supervisor::open(dir.path(), "sup1", cfg.clone()).unwrap();
//! assert_eq!(sup.scan().unwrap()[0]["action"], "orphaned");
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

pub mod budget;
pub mod census;
pub mod config;
pub mod envelope;
pub mod error;
pub mod failpoint;
pub mod fuzzing;
pub mod history;
pub mod json;
pub mod liveness;
pub mod runner;
pub mod store;
pub mod supervisor;
pub mod testing;
pub mod transport;
pub mod worker;

pub use config::Config;
pub use error::{Error, Result};
pub use runner::{Runner, TaskContext};
pub use supervisor::Supervisor;
