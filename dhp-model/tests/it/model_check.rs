//! The strict model passes every property at the CI bound; the
//! check-then-write variant (PROTOCOL §13.2) yields a fencing counterexample.

use std::time::Instant;

use dhp_model::check::{Bounds, DhpModel, PROPERTY_NAMES};
use dhp_model::judge::Variant;
use stateright::{Checker, Model};

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
