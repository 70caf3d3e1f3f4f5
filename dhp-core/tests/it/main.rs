//! dhp-core's integration tests: one test binary (building and linking one
//! binary per scenario cost minutes), one scenario per module file, in a folder
//! per area (the protocol's own scenarios at the top).
//! Helpers shared by the scenarios are the `*_support`/`common` modules.

use dhp_testkit::helpers as common;
use dhp_testkit::pg as pg_support;
mod tcp_support;
use dhp_testkit::torn as torn_support;

mod approval_unknown_status;
mod backends;
mod budget_kill_orphaned;
mod canonical;
mod checkpoint_progress_row;
mod checkpoint_wal_frames;
mod clock;
mod error_sources;
mod events_hooks;
mod features_production;
mod fuzz_corpus_replay;
mod interop;
mod lifecycle;
mod log;
mod pg;
mod scale;
mod sqlite_group_commit_synced;
mod tcp;
mod torn;
mod vectors;
