//! # dhp-chaos — seeded fault injection against real DHP processes
//!
//! A round dispatches M prime-census handoffs into a fresh store, starts
//! real `dhp work` worker processes and at least two `dhp supervisor`
//! processes (or the Python reference's, or any command speaking the same
//! command line), and lets a seeded injector SIGKILL workers, the leader
//! supervisor, followers and several processes at once, SIGSTOP workers and
//! SIGCONT them after they were replaced, and arm failpoints that kill a
//! worker inside the protocol. A provisioner starts recovery workers for
//! orphans and replacement supervisors. Afterwards [`check::check_round`]
//! verifies the invariants from the harness's own sources: the store audit
//! (every committed change, in commit order), the workload service's record
//! of served chunks, the processes it spawned, signalled and saw exit, the
//! store and the transport logs. The history the processes may append
//! their operations to is optional detail: an invariant that needs it and
//! lacks it is UNCHECKED, never held (CONTRACT.md §4–§5).
//!
//! A seed replays the fault *schedule* — which kind of fault, when, and
//! which of the eligible processes (by position) is hit — not the OS
//! interleaving: process start-up, scheduling and I/O timing differ from run
//! to run, so the same seed can take a different path.
//!
//! The history is JSON lines; every process appends with one `write(2)` per
//! line, and the checker reads it back:
//!
//! ```
//! use dhp_chaos::hist;
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("history.jsonl");
//! let mut w = hist::Writer::open(&path).unwrap();
//! w.record("fault", serde_json::json!({"kind": "kill-worker"}));
//! let h = hist::load(&path).unwrap();
//! assert_eq!((h.events.len(), h.malformed), (1, 0));
//! assert_eq!(h.events[0].op(), "fault");
//! assert!(h.events[0].is_chaos());
//! ```

// Library code documents every public item and never unwraps (tests may:
// clippy.toml allows it in `#[cfg(test)]` code).
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]

/// The version of the process contract (CONTRACT.md) this harness speaks:
/// 2 is version 1 plus the workload service (a version-1 worker runs with
/// `--workload local`). CONTRACT.md, the README and `--help` say the same
/// (tests/it/docs_agree.rs).
pub const CONTRACT_VERSION: u32 = 2;

pub mod audit;
pub use dhp_procs::cgroup;
pub mod check;
pub mod clock;
pub mod config;
pub mod coverage;
pub mod db;
pub mod error;
pub mod hist;
pub mod hosts;
pub mod lazyfs;
pub mod ledger;
pub mod locate;
pub mod pg;
pub mod pg_cluster;
pub mod procs;
pub mod proxy;
pub mod python;
pub mod report;
pub mod round;
pub mod scenario;
pub mod shrink;
pub mod site;
pub mod survivors;
pub mod teardown;
pub mod timeline;
mod timeline_env;
mod timeline_legend;
mod timeline_verdicts;
pub mod workload;

pub use error::Error;
