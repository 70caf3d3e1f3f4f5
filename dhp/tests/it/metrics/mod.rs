//! The `dhp` program's metrics scenarios.

mod a2a;
mod dashboard;
mod low_nofile;
mod prometheus;
mod trace_attempts;
