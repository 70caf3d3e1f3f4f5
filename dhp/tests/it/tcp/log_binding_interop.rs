//! The binding fields are invisible to the reference (dhp-protocol 1.3.0):
//! a log our worker writes, with `hid` and `prev` on every checkpoint line,
//! ingests into the reference's store with exactly our rows, and the
//! reference's own (unbound) log of the same work ingests into ours.
use crate::tcp_support::*;
use serde_json::Value;

fn ref_rows(root: &std::path::Path, hid: &str) -> Vec<(i64, String)> {
    let v = refctl_ok(&["checkpoints", root.to_str().unwrap(), hid], &[]);
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["seq"].as_i64().unwrap(), r["state_hash"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn bound_logs_ingest_into_the_reference() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let log = tmp.path().join("ours.log");
    let hid = census(&src, 0, 1500, 100);
    let (code, out, err) = finish(
        spawn_work(&src, "w", &hid, &["--ship", log.to_str().unwrap()], &[]),
        std::time::Duration::from_secs(60),
    );
    assert_eq!(code, 0, "{out} {err}");
    let recs = records(&log);
    assert!(
        recs.iter().filter(|v| v["type"] == "checkpoint").all(|v| v.get("hid").is_some()),
        "our lines must be bound"
    );
    assert!(recs.iter().any(|v| v.get("prev").is_some()));

    let py = tmp.path().join("py");
    let rep = refctl_ok(&["ingest", py.to_str().unwrap(), log.to_str().unwrap()], &[]);
    assert_eq!((rep["checkpoints_ingested"].as_i64(), rep["lines_skipped"].as_i64()), (Some(15), Some(0)), "{rep}");
    assert_eq!(ref_rows(&py, &hid), store_rows(&src, &hid));

    // The reference's own census, shipped by the reference: no binding
    // fields, and it still ingests into ours.
    let pysrc = tmp.path().join("pysrc");
    let pyhid = refctl_ok(
        &[
            "dispatch",
            pysrc.to_str().unwrap(),
            "--sdk",
            "--kind",
            "census",
            "--inputs",
            r#"{"lo": 0, "hi": 600}"#,
            "--schema",
            "{}",
        ],
        &[],
    )["hid"]
        .as_str()
        .unwrap()
        .to_string();
    let pylog = tmp.path().join("ref.log");
    refctl_ok(
        &[
            "census",
            pysrc.to_str().unwrap(),
            &pyhid,
            "--runner",
            "r",
            "--mode",
            "claim",
            "--ship",
            pylog.to_str().unwrap(),
        ],
        &[],
    );
    let recs: Vec<Value> = records(&pylog);
    assert!(recs.iter().all(|v| v.get("hid").is_none() && v.get("prev").is_none()));
    let rep = ingest_ours(&tmp.path().join("dst"), &pylog);
    assert_eq!(rep["lines_skipped"].as_i64(), Some(0), "{rep}");
    assert!(rep["checkpoints_new"].as_i64().unwrap() > 0, "{rep}");
    assert_eq!(store_rows(&tmp.path().join("dst"), &pyhid), ref_rows(&pysrc, &pyhid));
}
