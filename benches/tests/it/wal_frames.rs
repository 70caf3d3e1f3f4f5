//! `benches/wal_frames.py` (docs/scale.md, "What they cost a write") runs
//! and counts what it claims to: the dhp-rs store has more indexes, and
//! each claim and checkpoint there writes more WAL frames than on the
//! reference's schema.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

#[test]
fn indexed_store_writes_more_frames_per_claim_and_checkpoint() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("wal_frames.py");
    let dhp = dhp_testkit::dhp_bin();
    let out = Command::new(dhp_testkit::python())
        .arg(&script)
        .args(["--dhp", dhp.to_str().unwrap(), "--n", "20"])
        .output()
        .unwrap();
    assert!(out.status.success(), "wal_frames.py failed: {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let get = |store: &str, key: &str| v[store][key].as_f64().unwrap_or_else(|| panic!("no {store}.{key}: {v}"));
    assert!(get("dhp_rs_store", "indexes") > get("reference_store", "indexes"), "{v}");
    // A claim changes at least its handoff and ownership rows: some frames.
    assert!(get("reference_store", "claim") >= 2.0, "{v}");
    assert!(get("dhp_rs_store", "claim") > get("reference_store", "claim"), "{v}");
    assert!(get("dhp_rs_store", "checkpoint") > get("reference_store", "checkpoint"), "{v}");
}
