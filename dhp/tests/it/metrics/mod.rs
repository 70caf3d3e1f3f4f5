//! The `dhp` program's metrics scenarios.

mod a2a;
mod dashboard;
mod prometheus;
mod trace_attempts;
