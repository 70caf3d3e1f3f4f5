//! dhp-oracle's integration tests: one test binary (building and linking one
//! binary per scenario cost minutes), one scenario per module file.
//! Helpers shared by the scenarios are the `*_support`/`common` modules.

mod agree_with_dhp_core;
mod reference_vectors;
