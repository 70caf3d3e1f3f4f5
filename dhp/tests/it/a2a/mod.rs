//! The `dhp` program's a2a scenarios.

mod bad_input;
mod cli_flags;
mod connection_limits;
mod kill_mid_task;
mod low_nofile;
mod restart_reference;
mod safe_defaults;
mod sdk_cancel;
mod sdk_errors;
mod sdk_roundtrip;
mod task_shadowing;
