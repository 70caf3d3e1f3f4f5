//! dhp-chaos's checker over stores that dhp-core writes: small synthetic
//! rounds built with the library directly (no processes, no timing), then
//! judged by `dhp_chaos::check`. They live beside the mutants, not in the
//! judge: dhp-chaos links no implementation, even in its tests. One test
//! binary, one scenario per module file.

mod common;

mod checker_audit;
mod checker_detection;
mod checker_failover;
mod checker_forged;
mod checker_indeterminate;
mod checker_rules;
mod checker_standby_redo;
