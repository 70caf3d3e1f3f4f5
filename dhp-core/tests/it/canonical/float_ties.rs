//! Found by canonical_differential (seed 590411379181717492): a float whose
//! exact value lies halfway between the two shortest round-trip strings
//! (-224700635283.8244333e4 is exactly -2247006352838244.25). Python's
//! repr takes the even digit (…244.2), Rust's `{:e}` the upper (…244.3),
//! so the canonical bytes, and with them handoff ids and state hashes,
//! differed from the reference's. Checked against the reference directly.

use dhp_core::json;
use std::process::Command;

#[test]
fn halfway_floats_print_as_python_does() {
    let mut lits: Vec<String> =
        vec!["-224700635283.8244333e4".into(), "2247006352838244.25".into(), "0.5".into(), "5e-324".into()];
    // Doubles in [2^50, 2^51) are spaced 0.25 apart: every k + 0.25 and
    // k + 0.75 is a tie at 17 digits.
    for k in [1125899906842624u64, 1125899906842625, 1999999999999999, 2000000000000001, 2251799813685247] {
        for f in ["25", "75"] {
            lits.push(format!("{k}.{f}"));
            lits.push(format!("-{k}.{f}"));
        }
    }
    let text = format!("[{}]", lits.join(", "));
    let out = Command::new(dhp_testkit::python())
        .args(["-c", "import sys, json; from dhp import envelope as E; sys.stdout.write(E.canonical(json.loads(sys.argv[1])).decode())", &text])
        .output()
        .expect("run the reference");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let theirs = String::from_utf8(out.stdout).unwrap();
    let ours = String::from_utf8(json::canonical(&json::parse(&text).unwrap()).unwrap()).unwrap();
    assert_eq!(ours, theirs);
}
