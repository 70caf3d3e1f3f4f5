//! Bad input gets a clear, typed error, and nothing is lost: after each
//! rejected call the store's rows are exactly what they were.
use crate::common::*;
use dhp_core::transport::log;
use dhp_core::{envelope, json, Config, Error, Lease, Runner};
use serde_json::{json, Value};

struct Fixture {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    r: Runner,
    hid: String,
    fence: i64,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("s");
    let r = Runner::open(&root, "w", Config::default()).unwrap();
    let env =
        envelope::build("t", json!({"inline": {"n": 1}}), serde_json::from_str(SCHEMA_X).unwrap(), Default::default())
            .unwrap();
    let hid = r.dispatch(&env).unwrap();
    let ctx = r.claim(&hid).unwrap();
    ctx.checkpoint(&json!({"s": 1})).unwrap();
    let fence = ctx.fence();
    Fixture { _dir: dir, root, r, hid, fence: fence.get() }
}

/// Run `f`, expect the error kind, and check the store did not change.
fn rejected<T: std::fmt::Debug>(fx: &Fixture, kind: &str, f: impl FnOnce() -> Result<T, Error>) -> Error {
    let before = dump(&fx.root);
    let e = f().expect_err("must be rejected");
    assert_eq!(e.kind(), kind, "{e}");
    assert!(!e.to_string().is_empty());
    assert_eq!(before, dump(&fx.root), "store changed after a rejected call ({e})");
    e
}

#[test]
fn malformed_ids() {
    let fx = fixture();
    for bad in ["", "abc", &"A".repeat(64), &"g".repeat(64), &format!("{}\n", "a".repeat(64)), &"a".repeat(65)] {
        let e = rejected(&fx, "ValidationError", || fx.r.claim(bad));
        assert!(matches!(e, Error::MalformedId { what: "handoff_id", .. }));
        // A fence presented for a malformed id is refused where the lease is made.
        rejected(&fx, "ValidationError", || Lease::presented(bad, 0));
        rejected(&fx, "ValidationError", || fx.r.status(bad));
    }
    for bad in ["", "has space", "semi;colon", &"w".repeat(129), "ünï"] {
        assert!(matches!(fx.r.with_id(bad), Err(Error::MalformedId { what: "worker_id", .. })));
    }
}

#[test]
fn tampered_envelopes_are_refused_at_dispatch() {
    let fx = fixture();
    let good = envelope::build("t", json!({"inline": {"n": 2}}), json!({}), Default::default()).unwrap();
    let mut crossed = good.clone();
    crossed["task"]["inputs"]["inline"]["n"] = json!(999);
    rejected(&fx, "TamperError", || fx.r.dispatch(&crossed));
    // Inputs swapped and the id recomputed to match: input_hash still binds them.
    let mut rehashed = crossed.clone();
    rehashed["handoff_id"] = json!(envelope::handoff_id(&rehashed).unwrap());
    let e = rejected(&fx, "TamperError", || fx.r.dispatch(&rehashed));
    assert!(e.to_string().contains("input_hash"), "{e}");
    let mut running = good.clone();
    running["execution"]["status"] = json!("running");
    rejected(&fx, "StateError", || fx.r.dispatch(&running));
    rejected(&fx, "ValidationError", || fx.r.dispatch(&json!([1, 2])));
}

#[test]
fn wrong_tokens_and_unknown_handoffs() {
    let fx = fixture();
    let e = rejected(&fx, "FencingError", || {
        fx.r.checkpoint(&Lease::presented(&fx.hid, fx.fence + 1).unwrap(), &json!({"s": 2}))
    });
    assert!(
        matches!(e, Error::StaleFence { presented, current, .. } if presented.get() == 1 && current.map(|c| c.get()) == Some(0)),
        "{e:?}"
    );
    let other = fx.r.with_id("intruder").unwrap();
    rejected(&fx, "FencingError", || other.checkpoint(&Lease::presented(&fx.hid, fx.fence).unwrap(), &json!({"s": 2})));
    rejected(&fx, "FencingError", || other.complete(&Lease::presented(&fx.hid, fx.fence).unwrap(), &json!({"x": 1})));
    rejected(&fx, "UnknownHandoff", || fx.r.claim(&"0".repeat(64)));
    rejected(&fx, "StateError", || fx.r.claim(&fx.hid));
    rejected(&fx, "StateError", || fx.r.ack(&fx.hid));
    // An expired lease is LeaseLost, not a silent write.
    dhp_testkit::store::expire_lease(&fx.r, &fx.hid).unwrap();
    rejected(&fx, "LeaseLost", || fx.r.checkpoint(&Lease::presented(&fx.hid, fx.fence).unwrap(), &json!({"s": 2})));
}

#[test]
fn oversize_and_non_object_payloads() {
    let fx = fixture();
    let small =
        Config { max_checkpoint_bytes: 100, max_result_bytes: 100, max_envelope_bytes: 5000, ..Config::default() };
    let r = Runner::open(&fx.root, "w", small).unwrap();
    let big = json!({"blob": "x".repeat(200)});
    rejected(&fx, "OversizePayload", || r.checkpoint(&Lease::presented(&fx.hid, fx.fence).unwrap(), &big));
    rejected(&fx, "OversizePayload", || r.complete(&Lease::presented(&fx.hid, fx.fence).unwrap(), &big));
    rejected(&fx, "OversizePayload", || r.record_effect(&Lease::presented(&fx.hid, fx.fence).unwrap(), "s1", &big));
    let huge = envelope::build("t", json!({"inline": {"b": "y".repeat(6000)}}), json!({}), Default::default()).unwrap();
    rejected(&fx, "OversizePayload", || r.dispatch(&huge));
    rejected(&fx, "ValidationError", || fx.r.checkpoint(&Lease::presented(&fx.hid, fx.fence).unwrap(), &json!([1])));
    rejected(&fx, "ValidationError", || {
        fx.r.checkpoint(&Lease::presented(&fx.hid, fx.fence).unwrap(), &json!({"x": json::parse("1e999").unwrap()}))
    });
    rejected(&fx, "ValidationError", || fx.r.note_spend(&Lease::presented(&fx.hid, fx.fence).unwrap(), -1.0));
    let bad_bundle = vec![b'{'; 10];
    rejected(&fx, "ValidationError", || fx.r.resume(&bad_bundle));
}

#[test]
fn tampered_logs_change_nothing_and_truncated_lines_are_skipped() {
    let fx = fixture();
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config::default();
    let logp = dir.path().join("x.log");
    log::ship_envelope(&logp, &fx.r.envelope(&fx.hid).unwrap(), &cfg).unwrap();
    for i in 0..3 {
        log::ship_checkpoint(&logp, i, &json!({"i": i}), &cfg).unwrap();
    }
    let good = std::fs::read_to_string(&logp).unwrap();
    let fresh = dir.path().join("fresh");
    let rf = Runner::open(&fresh, "b", cfg.clone()).unwrap();
    let fresh_fx = Fixture {
        _dir: tempfile::tempdir().unwrap(),
        root: fresh.clone(),
        r: rf.clone(),
        hid: fx.hid.clone(),
        fence: 0,
    };

    // A state changed after hashing: refused whole, nothing ingested.
    let tampered = good.replacen(r#"{"i": 2}"#, r#"{"i": 7}"#, 1);
    std::fs::write(&logp, &tampered).unwrap();
    rejected(&fresh_fx, "TamperError", || log::ingest(rf.store().as_ref(), &logp, &cfg));
    // An envelope changed after hashing.
    let tampered_env = good.replacen(r#""n": 1"#, r#""n": 5"#, 1);
    std::fs::write(&logp, &tampered_env).unwrap();
    rejected(&fresh_fx, "TamperError", || log::ingest(rf.store().as_ref(), &logp, &cfg));
    // No envelope at all.
    std::fs::write(&logp, good.lines().skip(1).collect::<Vec<_>>().join("\n")).unwrap();
    rejected(&fresh_fx, "TransportError", || log::ingest(rf.store().as_ref(), &logp, &cfg));

    // A crash mid-write: truncated last line, garbage, invalid UTF-8.
    let mut bytes = good.clone().into_bytes();
    bytes.extend_from_slice(b"{\"at\": \"2026\", \"seq\": 3, \"sta");
    bytes.extend_from_slice(b"\nnot json\n\xff\xfe\n[1,2]\n");
    std::fs::write(&logp, &bytes).unwrap();
    let rep = log::ingest(rf.store().as_ref(), &logp, &cfg).unwrap();
    assert_eq!((rep.checkpoints_new, rep.lines_skipped, rep.max_seq), (3, 4, 2));
    // The reference dies on the invalid UTF-8 line (an untyped
    // UnicodeDecodeError); we skip it. Without that line both agree.
    let py = dir.path().join("py");
    let (code, out) = refctl(&["ingest", py.to_str().unwrap(), logp.to_str().unwrap()], &[]);
    assert_eq!((code, out["error_kind"].as_str()), (1, Some("UnicodeDecodeError")), "{out}");
    let mut bytes = good.into_bytes();
    bytes.extend_from_slice(b"{\"at\": \"2026\", \"seq\": 3, \"sta\nnot json\n[1,2]\n");
    std::fs::write(&logp, &bytes).unwrap();
    let out = refctl_ok(&["ingest", py.to_str().unwrap(), logp.to_str().unwrap()], &[]);
    assert_eq!((out["checkpoints_ingested"].as_i64(), out["lines_skipped"].as_i64()), (Some(3), Some(3)));
    let rep = log::ingest(rf.store().as_ref(), &logp, &cfg).unwrap();
    assert_eq!((rep.checkpoints_ingested, rep.lines_skipped), (3, 3));
}

#[test]
fn tampered_bundles_change_nothing() {
    let fx = fixture();
    let bundle = fx.r.suspend(&fx.hid).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("b");
    let rb = Runner::open(&other, "b", Config::default()).unwrap();
    let bfx = Fixture {
        _dir: tempfile::tempdir().unwrap(),
        root: other.clone(),
        r: rb.clone(),
        hid: fx.hid.clone(),
        fence: 0,
    };
    let mut v: Value = json::parse_bytes(&bundle).unwrap();
    v["envelope"]["task"]["inputs"]["inline"]["n"] = json!(3);
    rejected(&bfx, "TamperError", || rb.resume(&json::canonical(&v).unwrap()));
    let mut v: Value = json::parse_bytes(&bundle).unwrap();
    v["checkpoints"][0]["state"] = json!({"s": 666});
    v["checkpoints"][0]["state_hash"] = json!(json::state_text_and_hash(&json!({"s": 1})).unwrap().1);
    rejected(&bfx, "TamperError", || rb.resume(&json::canonical(&v).unwrap()));
    // Inputs swapped and the id recomputed: the input hash still binds them.
    let mut v: Value = json::parse_bytes(&bundle).unwrap();
    v["envelope"]["task"]["inputs"]["inline"]["n"] = json!(3);
    v["envelope"]["handoff_id"] = json!(envelope::handoff_id(&v["envelope"]).unwrap());
    let e = rejected(&bfx, "TamperError", || rb.resume(&json::canonical(&v).unwrap()));
    assert!(e.to_string().contains("input_hash"), "{e}");
    let mut v: Value = json::parse_bytes(&bundle).unwrap();
    v["dhp_bundle"] = json!("9.9");
    rejected(&bfx, "ValidationError", || rb.resume(&json::canonical(&v).unwrap()));
    rb.resume(&bundle).unwrap();
    rejected(&bfx, "StateError", || rb.resume(&bundle));
}

#[test]
fn newer_schema_is_refused_untouched() {
    let fx = fixture();
    let db = fx.root.join("dhp.sqlite3");
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute("INSERT INTO schema_version (version, applied_at) VALUES (4, 0)", []).unwrap();
    }
    let before = dump(&fx.root);
    let e = Runner::open(&fx.root, "w", Config::default()).unwrap_err();
    assert!(matches!(e, Error::NewerSchema { found: 4, supported: 3 }), "{e:?}");
    assert!(e.to_string().contains("newer"), "{e}");
    assert_eq!(before, dump(&fx.root));
    let (code, _, err) = dhp(&["status", fx.root.to_str().unwrap()], &[]);
    assert_eq!(code, 11);
    assert!(err.trim().lines().count() == 1 && err.contains("newer"), "{err}");
}

#[test]
fn cli_errors_are_one_line_with_documented_codes() {
    let fx = fixture();
    let root = fx.root.to_str().unwrap();
    let cases: Vec<(Vec<String>, i32, &str)> = vec![
        (vec!["status".into(), root.into(), "nothex".into()], 3, "ValidationError"),
        (vec!["status".into(), root.into(), "0".repeat(64)], 4, "UnknownHandoff"),
        (
            vec!["work".into(), root.into(), "--runner".into(), "w2".into(), "claim".into(), fx.hid.clone()],
            6,
            "StateError",
        ),
        (
            vec!["work".into(), root.into(), "--runner".into(), "w2".into(), "recover".into(), fx.hid.clone()],
            5,
            "OwnershipLost",
        ),
        (vec!["ack".into(), root.into(), fx.hid.clone()], 6, "StateError"),
        (
            vec!["dispatch".into(), root.into(), "--kind".into(), "k".into(), "--schema".into(), "{".into()],
            2,
            "UsageError",
        ),
        (vec!["resume".into(), root.into(), "/nonexistent/bundle".into()], 11, "IoError"),
    ];
    for (args, code, kind) in cases {
        let before = dump(&fx.root);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (c, v, err) = dhp(&args, &[]);
        assert_eq!((c, v["error_kind"].as_str()), (code, Some(kind)), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        assert!(err.starts_with("dhp: ") && !err.contains("panicked"), "{err}");
        assert_eq!(before, dump(&fx.root), "{args:?} changed the store");
    }
    let (c, _, err) = dhp(&["status", root], &[("DHP_LEASE_INTERVAL_S", "soon")]);
    assert_eq!(c, 11);
    assert!(err.contains("DHP_LEASE_INTERVAL_S"), "{err}");
}
