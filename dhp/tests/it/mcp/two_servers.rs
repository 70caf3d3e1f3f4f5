//! Both servers on one store at once: dispatch through one, claim and
//! checkpoint through the other, SIGKILL that server mid-task, and after a
//! supervisor orphans the handoff, recover and complete through the first.
//! Run in both directions (reference first, ours first).
use crate::mcp_support::{ours, py_session, reference, with_pidfile};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A short lease so the dead worker is noticed in about a second (A's own
/// is longer: see `handover`).
const ENV: [(&str, &str); 3] =
    [("DHP_LEASE_INTERVAL_S", "0.5"), ("DHP_LEASE_MAX_MISSED", "2"), ("DHP_SUPERVISOR_SCAN_S", "0.2")];

struct Supervisor(Child);
impl Drop for Supervisor {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn supervisor(root: &Path) -> Supervisor {
    Supervisor(
        Command::new(env!("CARGO_BIN_EXE_dhp"))
            .args(["supervisor"])
            .arg(root)
            .args(["sup-test", "60"])
            .envs(ENV)
            .stdout(Stdio::null())
            .spawn()
            .expect("start dhp supervisor"),
    )
}

fn by_label<'a>(steps: &'a Value, label: &str) -> &'a Value {
    &steps.as_array().unwrap().iter().find(|e| e["label"] == label).unwrap_or_else(|| panic!("no {label} in {steps}"))
        ["reply"]
}

fn handover(first_is_reference: bool) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let (pa, pb) = (dir.path().join("a.pid"), dir.path().join("b.pid"));
    let (a, b) = if first_is_reference { (reference(&root), ours(&root)) } else { (ours(&root), reference(&root)) };
    // B's short lease gets its death noticed in a second; A, which recovers
    // and goes on, has a longer one: under load the calls between its
    // recover and its checkpoint outlasted a 1 s lease (a fresh-clone CI run)
    let a = [vec!["env".into(), "DHP_LEASE_INTERVAL_S=2".into(), "DHP_LEASE_MAX_MISSED=3".into()], a].concat();
    // The supervisor wants an existing store; either server would make one.
    dhp_core::store::open_root(&root, dhp_core::store::OpenMode::Create).expect("create the store");
    let _sup = supervisor(&root);
    let args = [
        vec!["handover".into(), pa.display().to_string(), pb.display().to_string(), "--".into()],
        with_pidfile(&pa, &a),
        vec!["--".into()],
        with_pidfile(&pb, &b),
    ]
    .concat();
    let out = py_session(&args, &ENV);
    let (bs, as_) = (&out["b_steps"], &out["a_steps"]);
    assert_eq!(by_label(bs, "claim via B"), &json!({"ok": true, "fence": 0, "resume_from": null}));
    for n in 0..3 {
        assert_eq!(by_label(bs, &format!("checkpoint {n} via B")), &json!({"ok": true, "seq": n}));
    }
    let holding = by_label(as_, "status via A while B holds");
    assert_eq!((&holding["status"], &holding["owner"]), (&json!("running"), &json!("wb")));
    assert_eq!(by_label(as_, "status via A after kill")["status"], "orphaned", "{out}");
    // Orphaning bumps the fence (0 → 1), recovering bumps it again.
    assert_eq!(by_label(as_, "recover via A"), &json!({"ok": true, "fence": 2, "resume_from": {"n": 2}}));
    assert_eq!(by_label(as_, "checkpoint via A"), &json!({"ok": true, "seq": 3}));
    assert_eq!(by_label(as_, "complete via A"), &json!({"ok": true}));
    let st = by_label(as_, "status via A");
    assert_eq!(st["status"], "completed");
    assert_eq!(st["result"], json!({"y": 3}));
    assert_eq!(st["checkpoints"], 4);
    assert_eq!(st["attempt"], 1);
}

#[test]
fn dispatch_on_reference_work_on_ours_killed_recovered_on_reference() {
    handover(true);
}

#[test]
fn dispatch_on_ours_work_on_reference_killed_recovered_on_ours() {
    handover(false);
}
