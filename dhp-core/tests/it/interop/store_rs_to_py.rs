//! A store made and half-worked by Rust is continued and completed by the
//! reference; Rust then reads the reference's result.
use crate::common::*;
use dhp_core::{envelope, Config, Lease, Runner};
use serde_json::json;

#[test]
fn rust_half_worked_store_is_finished_by_python() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let r = Runner::open(root, "rs-w", Config::default()).unwrap();
    let env = envelope::build(
        "t",
        json!({"inline": {"n": 1e16, "neg": -0.0, "s": "tab\there"}}),
        serde_json::from_str(SCHEMA_X).unwrap(),
        Default::default(),
    )
    .unwrap();
    let hid = r.dispatch(&env).unwrap();
    let ctx = r.claim(&hid).unwrap();
    for i in 0..3 {
        ctx.checkpoint(&json!({"i": i, "x": 1.5e-7})).unwrap();
    }
    ctx.note_step(2).unwrap();
    drop(ctx); // the Rust worker dies

    // The reference sees our envelope, verifies it, and its supervisor orphans.
    let e = refctl_ok(&["envelope", root, &hid], &[]);
    assert_eq!(e["envelope"]["handoff_id"], hid.as_str());
    assert_eq!(e["envelope"]["execution"]["checkpoints"].as_array().unwrap().len(), 3);
    let v = python(&format!(
        "import dhp.envelope as E, json; from dhp.store import Store; s=Store({root:?}); \
         print(E.verify_id(s.get_envelope({hid:?})), E.verify_inputs(s.get_envelope({hid:?})))"
    ));
    assert_eq!(v.trim(), "True True");
    refctl_ok(&["expire", root, &hid], &[]);
    let scan = refctl_ok(&["scan", root, "--sup", "py-sup"], &[]);
    assert_eq!(scan["actions"][0]["action"], "orphaned", "{scan}");
    let fence = refctl_ok(&["recover", root, &hid, "--runner", "py-w"], &[])["fence"].as_i64().unwrap();
    // Numbers keep their text under arbitrary_precision: compare canonically.
    let last = refctl_ok(&["last", root, &hid], &[])["state"].clone();
    assert!(dhp_core::json::equivalent(&last, &json!({"i": 2, "x": 1.5e-7})), "{last}");
    let f = fence.to_string();
    assert_eq!(
        refctl_ok(&["checkpoint", root, &hid, "--runner", "py-w", "--fence", &f, "--state", r#"{"i": 3}"#], &[])["seq"],
        3
    );
    // Our stale context is fenced out by what Python did.
    let e = r.checkpoint(&Lease::presented(&hid, 0).unwrap(), &json!({"i": 99})).unwrap_err();
    assert_eq!(e.kind(), "FencingError");
    refctl_ok(&["complete", root, &hid, "--runner", "py-w", "--fence", &f, "--result", r#"{"x": 7}"#], &[]);

    let st = r.status(&hid).unwrap();
    assert_eq!(st["status"], "completed");
    assert_eq!(st["result"], json!({"x": 7}));
    assert_eq!(st["checkpoints"], 4);
    assert_eq!(st["steps"], 2);
    r.ack(&hid).unwrap();
    assert_eq!(refctl_ok(&["envelope", root, &hid], &[])["envelope"]["delivery"]["outbox"]["ack"], true);
}
