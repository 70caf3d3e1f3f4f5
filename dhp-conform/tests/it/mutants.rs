//! Every assertion can fail: for each mutant of our adapter (one
//! guarantee removed), the full suite fails exactly the assertion that
//! guards that guarantee, and nothing else fails, errors or is skipped.
use crate::common::mutants::{assert_each_mutant_fails_exactly_its_assertion, mutants};
use crate::common::*;
use std::collections::BTreeSet;

#[test]
fn every_assertion_has_a_mutant() {
    let mutants = mutants();
    let guarded: BTreeSet<&str> = mutants.iter().flat_map(|(_, a)| a.iter().map(String::as_str)).collect();
    let names = assertion_names();
    for n in &names {
        assert!(guarded.contains(n.as_str()), "no mutant is caught by {n}");
    }
    let listed =
        std::process::Command::new(crate::common::mutant_adapter_bin()).arg("--list-mutants").output().unwrap();
    let listed: BTreeSet<String> =
        String::from_utf8_lossy(&listed.stdout).lines().map(|l| l.split('\t').next().unwrap().to_string()).collect();
    let mut tested: BTreeSet<String> = mutants.iter().map(|(m, _)| m.clone()).collect();
    tested.extend(crate::common::mutants::EXPLORE_ONLY.iter().map(|m| m.to_string()));
    assert_eq!(listed, tested, "every mutant of the adapter is tested");
}

#[test]
fn each_mutant_fails_exactly_its_assertion() {
    assert_each_mutant_fails_exactly_its_assertion(&[]);
}
