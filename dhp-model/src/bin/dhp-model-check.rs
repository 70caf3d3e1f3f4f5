//! `dhp-model-check [--bound small|large|xl] [--variant strict|check-then-write]`:
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
        "dhp-model-check: {msg}\nusage: dhp-model-check [--bound small|large|xl] [--variant strict|check-then-write] [--max-states N]"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut bound, mut variant, mut cap) = ("small".to_string(), Variant::Strict, 50_000_000usize);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match (a.as_str(), it.next().map(String::as_str)) {
            ("--bound", Some(b @ ("small" | "large" | "xl"))) => bound = b.to_string(),
            ("--variant", Some("strict")) => variant = Variant::Strict,
            ("--variant", Some("check-then-write")) => variant = Variant::CheckThenWrite,
            ("--max-states", Some(n)) => match n.parse() {
                Ok(n) if n > 0 => cap = n,
                _ => return usage(&format!("--max-states: not a positive count: {n:?}")),
            },
            (flag, val) => return usage(&format!("bad argument {flag} {}", val.unwrap_or(""))),
        }
    }
    let b = match bound.as_str() {
        "large" => Bounds::large(variant),
        "xl" => Bounds::xl(variant),
        _ => Bounds::small(variant),
    };
    println!("bound {bound}: {b:?}");
    let t = Instant::now();
    // A cap on the states generated keeps a too-large bound from eating the
    // machine's memory (DFS keeps only the path; the visited set holds fingerprints): reaching it
    // means the check is incomplete, and says so.
    let c = DhpModel { b }.checker().target_state_count(cap).spawn_dfs().join();
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{} states generated, {} unique, max depth {}, {secs:.1}s",
        c.state_count(),
        c.unique_state_count(),
        c.max_depth()
    );
    if c.state_count() >= cap {
        println!("INCOMPLETE: stopped at the cap of {cap} generated states (--max-states)");
    }
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
    } else if c.state_count() >= cap {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}
