//! demo's integration tests: one test binary (building and linking one
//! binary per scenario cost minutes), one scenario per module file.
//! Helpers shared by the scenarios are the `*_support`/`common` modules.

mod common;

mod a2a_demo;
mod kill_demo_mirror;
mod kill_demo_netns;
mod kill_demo_transport_late;
mod mirror_bounded;
mod mirror_limits;
mod usage_error;
