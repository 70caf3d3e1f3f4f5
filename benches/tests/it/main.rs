//! benches's integration tests: one test binary (building and linking one
//! binary per scenario cost minutes), one scenario per module file.
//! Helpers shared by the scenarios are the `*_support`/`common` modules.

mod bench_help;
mod pg_smoke;
mod probe_pages;
mod smoke;
mod wal_frames;
