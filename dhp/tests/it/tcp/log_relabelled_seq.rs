//! A checkpoint line moved to another place in its own history: the seq
//! is not covered by the state hash, so relabelling line 3 as seq 7 (and
//! dropping the real 7) used to ingest cleanly and put an old state at a
//! later position. Its `prev` names checkpoint 2's hash, not 6's, so
//! ingest now refuses it (docs/log-chain.md).
use crate::tcp_support::*;
use serde_json::Value;

#[test]
fn a_relabelled_line_breaks_the_chain() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let log = tmp.path().join("a.log");
    let hid = census(&src, 0, 1000, 100);
    let (code, out, err) = finish(
        spawn_work(&src, "w", &hid, &["--ship", log.to_str().unwrap()], &[]),
        std::time::Duration::from_secs(60),
    );
    assert_eq!(code, 0, "{out} {err}");

    let text = std::fs::read_to_string(&log).unwrap();
    let mut lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let seven = lines.iter().position(|v| v["seq"] == 7).unwrap();
    let mut moved = lines.iter().find(|v| v["seq"] == 3).unwrap().clone();
    moved["seq"] = 7.into();
    lines[seven] = moved;
    let bad = tmp.path().join("relabelled.log");
    let body: Vec<String> = lines.iter().map(|v| dhp_core::json::dumps_sorted(v).unwrap()).collect();
    std::fs::write(&bad, body.join("\n") + "\n").unwrap();

    let dst = tmp.path().join("dst");
    let (code, out, err) = dhp(&["ingest", "--create", dst.to_str().unwrap(), bad.to_str().unwrap()], &[]);
    assert_eq!(code, 8, "relabelled line must be refused as tampered: {out} {err}");
    assert!(format!("{out}{err}").contains("does not follow checkpoint 6"), "{out} {err}");
    let (code, _, _) = dhp(&["status", dst.to_str().unwrap(), &hid], &[]);
    assert_ne!(code, 0, "nothing may be ingested from a refused log");
}
