//! The `dhp` program's integration tests: one test binary, the scenarios
//! in one folder per area (each a module), all of them running the `dhp`
//! binary (`CARGO_BIN_EXE_dhp`). The protocol library's own tests are
//! dhp-core's. Helpers shared by the scenarios are the `*_support`/`common`
//! modules.

mod a2a_support;
mod cli_support;
mod common;
mod dashboard_support;
mod mcp_support;
mod metrics_support;
use dhp_testkit::pg as pg_support;
mod tcp_support;

mod a2a;
mod cli;
mod dashboard;
mod http_limits;
mod interop;
mod mcp;
mod metrics;
mod pg;
mod supervision;
mod tcp;
