//! dhp-testkit's integration tests: one binary, one module per check.

mod http_stack;
mod installs;
mod layers;
mod sizes;
