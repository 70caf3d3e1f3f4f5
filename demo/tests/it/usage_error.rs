//! A bad command line is a usage error: exit 2, `demo: usage: …` on
//! stderr, no PASSED/FAILED verdict and no run directory kept — a typo says
//! nothing about the protocol.

use std::process::Command;

#[test]
fn bad_options_exit_2_without_a_verdict() {
    let out = Command::new(env!("CARGO_BIN_EXE_demo"))
        .args(["--json", "--pages", "10", "--kill-at", "10"])
        .output()
        .expect("running the demo");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(stderr.contains("demo: usage: --kill-at"), "{stderr}");
    assert!(!stderr.contains("PASSED") && !stderr.contains("FAILED") && !stderr.contains("kept"), "{stderr}");
    let summary: serde_json::Value = serde_json::from_str(stdout.trim()).expect("--json prints one object");
    assert!(summary.get("verdict").is_none(), "{summary}");
    assert!(summary["usage_error"].as_str().is_some_and(|m| m.contains("--kill-at")), "{summary}");
}
