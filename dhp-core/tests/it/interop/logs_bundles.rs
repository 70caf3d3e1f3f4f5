//! Transport logs and suspend bundles cross between implementations both
//! ways, and the bytes we write are the bytes the reference writes.
use crate::common::*;
use dhp_core::transport::log;
use dhp_core::{envelope, json, Config, Runner};
use serde_json::json;

fn rs_handoff(root: &str) -> (Runner, String) {
    let r = Runner::open(root, "rs-w", Config::default()).unwrap();
    let env = envelope::build(
        "t",
        json!({"inline": {"n": 2, "u": "ü\u{2029}"}}),
        serde_json::from_str(SCHEMA_X).unwrap(),
        Default::default(),
    )
    .unwrap();
    let hid = r.dispatch(&env).unwrap();
    (r, hid)
}

#[test]
fn rust_log_ingests_in_python_and_python_log_ingests_in_rust() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let (r, hid) = rs_handoff(a.to_str().unwrap());
    let ctx = r.claim(&hid).unwrap();
    let logp = dir.path().join("rs.log");
    let cfg = Config::default();
    log::ship_envelope(&logp, &r.envelope(&hid).unwrap(), &cfg).unwrap();
    for i in 0..5 {
        let st = json!({"i": i, "f": [1e16, -0.0, 0.30000000000000004], "s": "\u{1}\"\\"});
        let seq = ctx.checkpoint(&st).unwrap();
        log::ship_checkpoint(&logp, seq, &st, &cfg).unwrap();
    }
    // Python ingests our log, twice (idempotent), and can continue from it.
    let b = dir.path().join("b");
    let b = b.to_str().unwrap();
    for _ in 0..2 {
        let out = refctl_ok(&["ingest", b, logp.to_str().unwrap()], &[]);
        assert_eq!((out["checkpoints_ingested"].as_i64(), out["lines_skipped"].as_i64()), (Some(5), Some(0)));
    }
    let rows = refctl_ok(&["checkpoints", b, &hid], &[])["rows"].clone();
    assert_eq!(rows.as_array().unwrap().len(), 5);
    let ours = r.checkpoints(&hid).unwrap();
    for (p, o) in rows.as_array().unwrap().iter().zip(&ours) {
        assert_eq!(p["state_json"].as_str().unwrap(), o.state_json, "same state text");
        assert_eq!(p["state_hash"].as_str().unwrap(), o.state_hash);
    }
    assert_eq!(refctl_ok(&["status", b, &hid], &[])["status"], "pending");
    let f = refctl_ok(&["claim", b, &hid, "--runner", "py"], &[])["fence"].to_string();
    refctl_ok(&["complete", b, &hid, "--runner", "py", "--fence", &f, "--result", r#"{"x": 1}"#], &[]);

    // The reverse: Python ships a log, Rust ingests it, byte-identical lines.
    let c = dir.path().join("c");
    let c = c.to_str().unwrap();
    let phid = refctl_ok(
        &["dispatch", c, "--kind", "t", "--inputs", r#"{"k": [1, 2.5, "\u00e9"]}"#, "--schema", SCHEMA_X],
        &[],
    )["hid"]
        .as_str()
        .unwrap()
        .to_string();
    // Nine Python start-ups run under this lease: a loaded machine takes
    // longer than the default 6 s, and nothing heartbeats in between.
    let long_lease = [("DHP_LEASE_INTERVAL_S", "60")];
    let pf = refctl_ok(&["claim", c, &phid, "--runner", "py"], &long_lease)["fence"].to_string();
    let plog = dir.path().join("py.log");
    let plog_s = plog.to_str().unwrap();
    refctl_ok(&["ship-envelope", plog_s, c, &phid], &[]);
    for i in 0..4 {
        let st = format!(r#"{{"i": {i}, "x": 1E5, "e": "\u2028"}}"#);
        let seq = refctl_ok(&["checkpoint", c, &phid, "--runner", "py", "--fence", &pf, "--state", &st], &long_lease)
            ["seq"]
            .to_string();
        refctl_ok(&["ship-checkpoint", plog_s, &seq, "--state", &st], &[]);
    }
    let text = std::fs::read_to_string(&plog).unwrap();
    for line in text.lines() {
        let v = json::parse(line).unwrap();
        if v["type"] == "envelope" {
            assert_eq!(log::envelope_line(&v["envelope"]).unwrap(), line, "envelope line bytes");
        } else {
            let ours = log::checkpoint_line(
                v["seq"].as_i64().unwrap(),
                &v["state"],
                v["state_hash"].as_str().unwrap(),
                v["at"].as_str().unwrap(),
            )
            .unwrap();
            assert_eq!(ours, line, "checkpoint line bytes");
        }
    }
    let d = dir.path().join("d");
    let rd = Runner::open(&d, "rs-b", Config::default()).unwrap();
    let rep = log::ingest(rd.store().as_ref(), &plog, &Config::default()).unwrap();
    assert_eq!((rep.checkpoints_new, rep.lines_skipped, rep.created), (4, 0, true));
    let rep2 = log::ingest(rd.store().as_ref(), &plog, &Config::default()).unwrap();
    assert_eq!((rep2.checkpoints_new, rep2.created), (0, false), "re-ingest is idempotent");
    let mut ctx = rd.claim(&phid).unwrap();
    assert!(json::equivalent(
        &rd.last_checkpoint(&phid).unwrap().unwrap(),
        &json!({"i": 3, "x": 100000.0, "e": "\u{2028}"})
    ));
    assert_eq!(ctx.checkpoint(&json!({"i": 4})).unwrap(), 4);
    ctx.complete(&json!({"x": 4})).unwrap();
}

#[test]
fn bundles_cross_both_ways_and_match_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let (r, hid) = rs_handoff(a.to_str().unwrap());
    let ctx = r.claim(&hid).unwrap();
    for i in 0..3 {
        ctx.checkpoint(&json!({"i": i, "deep": {"z": [1, {"y": null}], "a": true}})).unwrap();
    }
    // Same store, suspended by each implementation: identical bundle bytes.
    let copy = dir.path().join("a-copy");
    std::fs::create_dir(&copy).unwrap();
    let src = rusqlite::Connection::open(a.join("dhp.sqlite3")).unwrap();
    src.execute("VACUUM INTO ?1", [copy.join("dhp.sqlite3").to_str().unwrap()]).unwrap();
    let ours = r.suspend(&hid).unwrap();
    let pyb = dir.path().join("py.bundle");
    refctl_ok(&["suspend", copy.to_str().unwrap(), &hid, "--out", pyb.to_str().unwrap()], &[]);
    let theirs = std::fs::read(&pyb).unwrap();
    assert_eq!(String::from_utf8_lossy(&ours), String::from_utf8_lossy(&theirs), "bundle bytes");

    // Our bundle resumes in Python and completes there.
    let ob = dir.path().join("rs.bundle");
    std::fs::write(&ob, &ours).unwrap();
    let b = dir.path().join("b");
    let b = b.to_str().unwrap();
    assert_eq!(refctl_ok(&["resume", b, ob.to_str().unwrap()], &[])["hid"], hid.as_str());
    let st = refctl_ok(&["status", b, &hid], &[]);
    assert_eq!(
        (st["status"].as_str(), st["attempt"].as_i64(), st["checkpoints"].as_i64()),
        (Some("pending"), Some(1), Some(3))
    );

    // Python's bundle resumes in Rust and completes here.
    let c = dir.path().join("c");
    let rc = Runner::open(&c, "rs-c", Config::default()).unwrap();
    assert_eq!(rc.resume(&theirs).unwrap(), hid);
    assert_eq!(rc.last_checkpoint(&hid).unwrap().unwrap()["i"], 2);
    let mut ctx = rc.claim(&hid).unwrap();
    assert_eq!(ctx.checkpoint(&json!({"i": 3})).unwrap(), 3);
    ctx.complete(&json!({"x": 3})).unwrap();
    assert_eq!(rc.status(&hid).unwrap()["attempt"], 1);
}
