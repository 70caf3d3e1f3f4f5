//! The strict model passes every property at the CI bound; the
//! check-then-write variant (PROTOCOL §13.2) yields a fencing counterexample.

use std::time::Instant;

use dhp_model::check::{Bounds, DhpModel, PROPERTY_NAMES};
use dhp_model::judge::Variant;
use stateright::{Checker, HasDiscoveries, Model};

fn run(b: Bounds) -> (impl Checker<DhpModel>, f64) {
    let t = Instant::now();
    let c = DhpModel { b }.checker().spawn_bfs().join();
    (c, t.elapsed().as_secs_f64())
}

#[test]
fn strict_model_holds_every_property() {
    let (c, secs) = run(Bounds::small(Variant::Strict));
    println!("strict, CI bound: {} states ({} unique) in {secs:.2}s", c.state_count(), c.unique_state_count());
    for name in PROPERTY_NAMES {
        if let Some(path) = c.discovery(name) {
            panic!("the strict model breaks {name:?}:\n{path}");
        }
    }
    assert!(c.unique_state_count() > 1000, "the bound explores real interleavings");
}

#[test]
fn check_then_write_has_a_fencing_counterexample() {
    let (c, secs) = run(Bounds::small(Variant::CheckThenWrite));
    let name = "one owner at a time, with fencing";
    let path = c.discovery(name).expect("check-then-write lets a fenced-out worker write");
    println!(
        "check-then-write, CI bound: {} unique states in {secs:.2}s; counterexample:\n{path}",
        c.unique_state_count()
    );
    let last = path.last_state();
    let stale = last.ghost.stale.clone().expect("the last state records the stale write");
    println!("{stale}");
    assert!(stale.contains("wrote checkpoint"), "{stale}");
}

/// Each property fails against the bug planted for it (the fencing one
/// against check-then-write, above).
#[test]
fn each_property_fails_against_its_mutant() {
    use dhp_model::check::Mutant::*;
    let cases = [
        (IgnoreBudget, "no silent budget overrun"),
        (CrossedInput, "no crossed inputs"),
        (UntypedDlq, "no untyped results"),
        (OrphanDropsLog, "no lost results"),
        (NoRecover, "every handoff ends completed or dead-lettered (fair continuation)"),
    ];
    for (m, name) in cases {
        let b = Bounds { mutant: Some(m), ..Bounds::small(Variant::Strict) };
        let stop = HasDiscoveries::AnyOf([name].into_iter().collect());
        let c = DhpModel { b }.checker().finish_when(stop).spawn_dfs().join();
        let path = c.discovery(name).unwrap_or_else(|| panic!("{m:?} must break {name:?}"));
        println!("{m:?} breaks {name:?}:\n{path}");
    }
}

/// The nightly bound (36 s in a release build, minutes in debug): run with
/// `cargo nextest run -p dhp-model --run-ignored only`, or use
/// `dhp-model-check --bound large` (benches/model_check.sh).
#[test]
#[ignore]
fn large_bound_strict_holds_every_property() {
    let t = Instant::now();
    let c = DhpModel { b: Bounds::large(Variant::Strict) }.checker().spawn_dfs().join();
    println!("strict, large bound: {} unique states in {:.1}s", c.unique_state_count(), t.elapsed().as_secs_f64());
    for name in PROPERTY_NAMES {
        assert!(c.discovery(name).is_none(), "the strict model breaks {name:?} at the large bound");
    }
}
