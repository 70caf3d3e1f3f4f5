//! `dhp-model-check [--bound small|large] [--variant strict|check-then-write]`:
//! the exhaustive check of dhp-model, with the states explored and the
//! time taken; exit 1 if a property fails (expected for check-then-write's
//! fencing property, whose counterexample it prints).

use std::process::ExitCode;
use std::time::Instant;

use dhp_model::check::{Bounds, DhpModel, PROPERTY_NAMES};
use dhp_model::judge::Variant;
use stateright::{Checker, Model};

fn usage(msg: &str) -> ExitCode {
    eprintln!(
        "dhp-model-check: {msg}\nusage: dhp-model-check [--bound small|large] [--variant strict|check-then-write]"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut bound, mut variant) = ("small".to_string(), Variant::Strict);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match (a.as_str(), it.next().map(String::as_str)) {
            ("--bound", Some(b @ ("small" | "large"))) => bound = b.to_string(),
            ("--variant", Some("strict")) => variant = Variant::Strict,
            ("--variant", Some("check-then-write")) => variant = Variant::CheckThenWrite,
            (flag, val) => return usage(&format!("bad argument {flag} {}", val.unwrap_or(""))),
        }
    }
    let b = if bound == "large" { Bounds::large(variant) } else { Bounds::small(variant) };
    println!("bound {bound}: {b:?}");
    let t = Instant::now();
    let c = DhpModel { b }.checker().spawn_bfs().join();
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{} states generated, {} unique, max depth {}, {secs:.1}s",
        c.state_count(),
        c.unique_state_count(),
        c.max_depth()
    );
    let mut failed = false;
    for name in PROPERTY_NAMES {
        match c.discovery(name) {
            None => println!("held: {name}"),
            Some(path) => {
                failed = true;
                println!("FAILED: {name}\n{path}");
                if let Some(s) = &path.last_state().ghost.stale {
                    println!("  {s}");
                }
            }
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
