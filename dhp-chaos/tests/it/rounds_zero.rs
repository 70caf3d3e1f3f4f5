//! `--rounds 0` runs nothing, so it must not claim that every invariant
//! held: it is a usage error.
use crate::common::*;

#[test]
fn rounds_zero_is_a_usage_error() {
    let o = std::process::Command::new(chaos_bin()).args(["--rounds", "0", "--quiet"]).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(!stdout.contains("ALL INVARIANTS HELD"), "{stdout}");
    assert!(stderr.contains("--rounds"), "{stderr}");
}
