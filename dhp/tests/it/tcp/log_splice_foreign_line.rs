//! Item 4 of the hardening issue: a checkpoint line copied from another
//! handoff's log verifies on its own (its state hash is its own), so
//! before lines were bound to their handoff it ingested cleanly, and put
//! first it silently won over the real line with the same seq. Our
//! worker's lines carry `hid` and `prev` (docs/log-chain.md): ingest
//! refuses the spliced log as tampered and leaves the store unchanged.
use crate::tcp_support::*;
use serde_json::Value;
use std::path::Path;

/// Work a census handoff to completion, shipping to `log`.
fn worked_log(root: &Path, lo: u64, log: &Path) -> String {
    let hid = census(root, lo, lo + 1000, 100);
    let (code, out, err) = finish(
        spawn_work(root, "w", &hid, &["--ship", log.to_str().unwrap()], &[]),
        std::time::Duration::from_secs(60),
    );
    assert_eq!(code, 0, "{out} {err}");
    hid
}

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p).unwrap().lines().map(str::to_string).collect()
}

#[test]
fn a_line_spliced_from_another_handoff_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let (log_a, log_b) = (tmp.path().join("a.log"), tmp.path().join("b.log"));
    let hid_a = worked_log(&src, 0, &log_a);
    let hid_b = worked_log(&src, 5000, &log_b);

    // Every line our worker wrote is bound to its handoff.
    let a = lines(&log_a);
    for l in &a[1..] {
        let v: Value = serde_json::from_str(l).unwrap();
        assert_eq!(v["hid"], hid_a.as_str(), "{l}");
        assert_eq!(v.get("prev").is_some(), v["seq"] != 0, "{l}");
    }

    // B's checkpoint 4 put in front of A's checkpoint 4.
    let foreign = lines(&log_b).into_iter().find(|l| l.contains("\"seq\": 4,")).unwrap();
    let pos = a.iter().position(|l| l.contains("\"seq\": 4,")).unwrap();
    let mut spliced = a.clone();
    spliced.insert(pos, foreign.clone());
    let bad = tmp.path().join("spliced.log");
    std::fs::write(&bad, spliced.join("\n") + "\n").unwrap();

    let dst = tmp.path().join("dst");
    let (code, out, err) = dhp(&["ingest", "--create", dst.to_str().unwrap(), bad.to_str().unwrap()], &[]);
    assert_eq!(code, 8, "spliced log must be refused as tampered: {out} {err}");
    assert!(err.contains("belongs to handoff") || out.to_string().contains("belongs to handoff"), "{out} {err}");
    // Nothing was ingested: the handoff is unknown to the fresh root.
    let (code, _, _) = dhp(&["status", dst.to_str().unwrap(), &hid_a], &[]);
    assert_ne!(code, 0, "handoff must not exist after a refused ingest");

    // The same line with its binding fields removed (as if hand-edited to
    // look like a reference line) still conflicts with A's own seq 4.
    let mut stripped: Value = serde_json::from_str(&foreign).unwrap();
    stripped.as_object_mut().unwrap().retain(|k, _| k != "hid" && k != "prev");
    let mut spliced = a.clone();
    spliced.insert(pos, dhp_core::json::dumps_sorted(&stripped).unwrap());
    std::fs::write(&bad, spliced.join("\n") + "\n").unwrap();
    let (code, out, err) = dhp(&["ingest", "--create", dst.to_str().unwrap(), bad.to_str().unwrap()], &[]);
    assert_eq!(code, 8, "conflicting duplicate seq must be refused: {out} {err}");

    // The clean log still ingests, whole, and B's log too.
    let rep = ingest_ours(&dst, &log_a);
    assert_eq!((rep["checkpoints_new"].as_i64(), rep["lines_skipped"].as_i64()), (Some(10), Some(0)), "{rep}");
    assert_eq!(store_rows(&dst, &hid_a), store_rows(&src, &hid_a));
    ingest_ours(&dst, &log_b);
    assert_eq!(store_rows(&dst, &hid_b), store_rows(&src, &hid_b));
}
