//! A reference claim that dies between its two writes (ownership row
//! inserted, envelope still `pending`) leaves a handoff that neither
//! implementation can claim or recover. Our supervisor repairs it once the
//! dead claimer's lease ran out, and the reference's worker recovers it
//! and finishes.
use crate::common::*;
use dhp_core::{Config, Runner};
use dhp_workload::census;

const LEASE: &[(&str, &str)] = &[
    ("DHP_LEASE_INTERVAL_S", "0.25"),
    ("DHP_LEASE_MAX_MISSED", "2"),
    ("DHP_SUPERVISOR_SCAN_S", "0.1"),
    ("DHP_LEADER_TTL_S", "1.0"),
];

/// The reference's `Runner3.claim`, killed right before its envelope write.
const CRASHING_CLAIM: &str = r#"
import os, sys
from dhp.runner3 import Runner3
root, hid = sys.argv[1:3]
r = Runner3(root, runner_id="py-crash")
r._save = lambda env: os._exit(7)
r.claim(hid)
"#;

#[test]
fn a_reference_claim_killed_between_its_writes_is_repaired_and_finished_by_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let (code, v, err) = dhp(&["dispatch", root, "--census", "1000,3000,100"], &[]);
    assert_eq!(code, 0, "{err}");
    let hid = v["hid"].as_str().unwrap().to_string();
    let st = std::process::Command::new(dhp_testkit::python())
        .args(["-c", CRASHING_CLAIM, root, &hid])
        .envs(LEASE.iter().copied())
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(7));

    let r = Runner::open(root, "observer", Config::default()).unwrap();
    assert_eq!(r.status(&hid).unwrap()["status"], "pending");
    assert_eq!(r.ownership(&hid).unwrap().unwrap().holder, "py-crash");
    let (code, v) = refctl(&["claim", root, &hid, "--runner", "py-x"], LEASE);
    assert!(code != 0 && v["error_kind"] == "OwnershipLost", "stuck: {v}");
    let (code, v) = refctl(&["recover", root, &hid, "--runner", "py-x"], LEASE);
    assert!(code != 0 && v["error"].as_str().unwrap().contains("never claimed"), "stuck: {v}");

    let (code, v, err) = dhp(&["supervisor", root, "rs-sup", "1.5"], LEASE);
    assert_eq!(code, 0, "{err}");
    let acts = v["actions"].as_array().unwrap();
    assert_eq!(acts.len(), 1, "{v}");
    assert_eq!(acts[0]["torn"], "torn-claim");
    assert_eq!(acts[0]["fence"], 1);

    // the recovering reference worker's own lease: nothing watches it any
    // more, and a 0.5 s one ran out under load (LeaseLost at a load of 40)
    let long = [("DHP_LEASE_INTERVAL_S", "5"), ("DHP_LEASE_MAX_MISSED", "3")];
    let v = refctl_ok(&["census", root, &hid, "--runner", "py-w", "--mode", "recover"], &long);
    assert_eq!(v["fence"], 2, "{v}");
    let st = r.status(&hid).unwrap();
    assert_eq!(st["status"], "completed", "{st}");
    assert_eq!(st["result"]["prime_count"], census::expected(1000, 3000, 100)["prime_count"]);
}
