//! Issue 11 item 1 with real processes of both implementations: the
//! reference's `Supervisor3.orphan` moves the row to the tombstone, and
//! while it reads the envelope (its second step) our `dhp work … recover`
//! takes the handoff; the reference then writes "orphaned" over the
//! recovered envelope. Before the repair neither implementation acted
//! again. Our supervisor repairs it once the recoverer's lease ran out, and
//! the reference's own worker recovers and finishes the census.
use crate::common::*;
use dhp_core::{Config, Runner};
use dhp_workload::census;

const LEASE: &[(&str, &str)] = &[
    ("DHP_LEASE_INTERVAL_S", "0.25"),
    ("DHP_LEASE_MAX_MISSED", "2"),
    ("DHP_SUPERVISOR_SCAN_S", "0.1"),
    ("DHP_LEADER_TTL_S", "1.0"),
];

/// Run the reference's orphan with our recover inside its envelope read.
const RACE: &str = r#"
import subprocess, sys
from dhp.supervisor3 import Supervisor3
root, hid, dhp_bin = sys.argv[1:4]
sup = Supervisor3(root, supervisor_id="py-sup")
real = sup.store.get_envelope
fired = []
def read_with_recover(h):
    if not fired:
        fired.append(1)
        # between force_orphan (committed) and the envelope write
        rc = subprocess.run([dhp_bin, "work", root, "--runner", "rs-R", "recover", hid,
                             "--stop-after", "1", "--no-liveness"]).returncode
        assert rc == 3, rc
    return real(h)
sup.store.get_envelope = read_with_recover
print(sup.orphan(hid))
"#;

#[test]
fn reference_orphan_racing_our_recover_is_repaired_and_the_reference_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let (code, v, err) = dhp(&["dispatch", root, "--census", "1000,3000,100"], &[]);
    assert_eq!(code, 0, "{err}");
    let hid = v["hid"].as_str().unwrap().to_string();
    // rs-w1's lease is expired by hand below: a short one only risked a late
    // heartbeat under load (LeaseLost at a load of 40)
    let long = [("DHP_LEASE_INTERVAL_S", "5"), ("DHP_LEASE_MAX_MISSED", "3")];
    let (code, _, err) =
        dhp(&["work", root, "--runner", "rs-w1", "claim", &hid, "--stop-after", "2", "--no-liveness"], &long);
    assert_eq!(code, 3, "{err}");
    refctl_ok(&["expire", root, &hid], &[]);

    let out = std::process::Command::new(dhp_testkit::python())
        .args(["-c", RACE, root, &hid, dhp_bin().to_str().unwrap()])
        .envs(LEASE.iter().copied())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    // The torn orphan of issue 11: orphaned, held by rs-R, fence moved by 2.
    let r = Runner::open(root, "observer", Config::default()).unwrap();
    assert_eq!(r.status(&hid).unwrap()["status"], "orphaned");
    let own = r.ownership(&hid).unwrap().unwrap();
    assert_eq!((own.holder.as_str(), own.fence.get()), ("rs-R", 2));
    let (code, v) = refctl(&["recover", root, &hid, "--runner", "py-x"], LEASE);
    assert!(code != 0 && v["error"].as_str().unwrap().contains("not orphaned"), "{v}");
    let (code, v) = refctl(&["claim", root, &hid, "--runner", "py-x"], LEASE);
    assert!(code != 0 && v["error"].as_str().unwrap().contains("status is orphaned"), "{v}");
    // The reference's supervisor does not act on it, though rs-R's lease
    // ran out (waited for, so the check is not vacuous).
    dhp_testkit::wait_until(std::time::Duration::from_secs_f64(10.0), "rs-R's lease ran out", || {
        dhp_core::envelope::now() > own.lease_expires_at
    });
    let v = refctl_ok(&["scan", root, "--sup", "py-sup2"], LEASE);
    assert_eq!(v["actions"], serde_json::json!([]), "{v}");
    let leader = dhp_testkit::store::leader(&r).unwrap().map(|l| l.holder);
    assert_eq!(leader.as_deref(), Some("py-sup2"), "the scan ran as the leader");

    // Ours repairs it once rs-R's lease (0.5 s) and py-sup2's leadership (1 s) ran out.
    let (code, v, err) = dhp(&["supervisor", root, "rs-sup", "3"], LEASE);
    assert_eq!(code, 0, "{err}");
    let repaired: Vec<_> = v["actions"].as_array().unwrap().iter().filter(|a| a["action"] == "repaired").collect();
    assert_eq!(repaired.len(), 1, "{v}");
    assert_eq!(repaired[0]["torn"], "torn-orphan");
    assert_eq!(repaired[0]["fence"], 3);
    assert_eq!(r.ownership(&hid).unwrap().unwrap().holder, "__orphaned__");

    // The reference's worker recovers (fence 4) and finishes from the last checkpoint.
    let v = refctl_ok(&["census", root, &hid, "--runner", "py-w", "--mode", "recover"], &long);
    assert_eq!(v["fence"], 4, "{v}");
    let st = r.status(&hid).unwrap();
    assert_eq!(st["status"], "completed", "{st}");
    let want = census::expected(1000, 3000, 100);
    assert_eq!(st["result"]["prime_count"], want["prime_count"]);
    assert_eq!(st["result"]["prime_sum"], want["prime_sum"]);
}
