//! dhp-testkit's integration tests: one binary, one module per check.

mod layers;
mod sizes;
mod installs;
