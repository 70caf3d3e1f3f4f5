//! The mutant each invariant's declaration names
//! (`dhp_chaos::check::DESCRIPTORS`): the mutant tests take their mutant
//! from here, and `mutants_declared.rs` checks that every invariant has a
//! test that runs its mutant and requires that it catch it.

use super::{mutant, Run};
use dhp_chaos::check::{Descriptor, DESCRIPTORS};

/// The declaration of `inv`.
pub fn declared(inv: &str) -> &'static Descriptor {
    DESCRIPTORS.iter().find(|d| d.name == inv).unwrap_or_else(|| panic!("no invariant is declared as {inv:?}"))
}

/// The command line of `inv`'s declared mutant: this build's program, with its `--mode`.
pub fn declared_mutant(inv: &str) -> String {
    let m = declared(inv).mutant;
    let bin = mutant(m.program.bin()).display().to_string();
    match m.mode {
        Some(mode) => format!("{bin} --mode {mode}"),
        None => bin,
    }
}

/// The `--mode` of `inv`'s declared mutant (for helpers that build the command themselves).
pub fn declared_mode(inv: &str) -> &'static str {
    declared(inv).mutant.mode.unwrap_or_else(|| panic!("{inv}'s mutant has no --mode"))
}

/// The round, run with `inv`'s declared mutant, was caught by `inv`.
pub fn declared_mutant_caught(r: &Run, inv: &str) {
    assert_eq!(r.code, 1, "a violation must exit 1\n{}", r.dump());
    assert!(
        !r.violations(inv).is_empty(),
        "{inv} did not catch its declared mutant ({})\n{}",
        declared(inv).mutant,
        r.dump()
    );
}
