//! `demo --a2a --json` end to end: the SDK client over HTTP, the worker
//! SIGKILLed mid-task, the standby recovers; the client saw only
//! SUBMITTED/WORKING → COMPLETED and the result matches a recomputation.

use dhp_workload::census;
use serde_json::Value;
use std::process::Command;

#[test]
fn a2a_demo_is_green() {
    // The reference venv (with a2a-sdk) is made if missing, never skipped.
    let out = Command::new(env!("CARGO_BIN_EXE_demo"))
        .args(["--a2a", "--json"])
        .env("DHP_PYTHON", dhp_testkit::python())
        .output()
        .expect("running the demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let s: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("no JSON summary ({e}): {stdout}\n{stderr}"));
    assert_eq!(out.status.code(), Some(0), "{s}\n{stderr}");
    assert_eq!(s["verdict"], "GREEN", "{s}");
    assert_eq!(s["observed"], serde_json::json!(["SUBMITTED", "WORKING", "COMPLETED"]), "{s}");
    assert_eq!(s["result"], census::expected(0, 600_000, 20_000), "{s}");
    assert_eq!(s["committed_chunks_redone"], 0, "{s}");
    assert!(s["killed_after_checkpoints"].as_u64().unwrap() >= 8, "{s}");
    assert!(stderr.contains("client saw: SUBMITTED → WORKING → COMPLETED"), "{stderr}");
}
