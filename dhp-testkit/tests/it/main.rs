//! dhp-testkit's integration tests: one binary, one module per check.

mod installs;
mod layers;
mod sizes;
