//! The binding lives in the store, in the reference bridge's own field
//! (`provenance.a2a_task_id`): a restarted `dhp a2a` answers for every task,
//! tasks the reference's `DHPBridge` created are served (and run by our
//! pool), and a fresh reference bridge reads our tasks with the same states.
use crate::a2a_support::*;
use dhp_workload::census;
use serde_json::Value;
use std::process::Command;

fn py(code: &str) -> Value {
    let out = Command::new(dhp_testkit::python()).arg("-c").arg(code).output().expect("run python");
    assert!(out.status.success(), "python failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("python printed no JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

fn state_and_result(url: &str, tid: &str) -> (String, Value) {
    let t = &sdk_ok(url, &["get", tid])[0];
    let state = t["status"]["state"].as_str().unwrap().to_string();
    let result =
        t["artifacts"][0]["parts"][0]["text"].as_str().map(|s| serde_json::from_str(s).unwrap()).unwrap_or(Value::Null);
    (state, result)
}

#[test]
fn restarted_bridge_and_reference_bridge_see_the_same_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let root = new_store(dir.path());
    let root_s = root.to_str().unwrap().to_string();
    let mut first = Server::start(&root, &["--workers", "1"], SHORT);

    // Ours, run to completion by our pool.
    let ours = sdk_ok(&first.url, &["send", &census_task(0, 20_000, 2_000)]);
    let ours_id = ours[0]["task"]["id"].as_str().unwrap().to_string();
    assert_eq!(ours[0]["task"]["status"]["state"], "TASK_STATE_COMPLETED");

    // The reference's bridge submits into the same store; our server binds
    // it on first sight and our pool runs it.
    let r = py(&format!(
        "import json; from dhp.a2a_bridge import DHPBridge\n\
         b = DHPBridge({root_s:?}, bridge_id='ref-bridge')\n\
         t = b.submit_task('census', inputs={{'lo': 0, 'hi': 30000, 'chunk': 3000}})\n\
         print(json.dumps({{'id': t.id, 'hid': b.task_handoff[t.id]}}))"
    ));
    let ref_id = r["id"].as_str().unwrap().to_string();
    let watched = sdk_ok(&first.url, &["watch", &ref_id, "--timeout", "60"]);
    assert_eq!(watched.last().unwrap()["state"], "TASK_STATE_COMPLETED", "{watched:?}");
    assert_eq!(watched.last().unwrap()["task"]["metadata"]["dhp_handoff_id"], r["hid"]);

    // The server dies with no warning; a new one, without workers, starts.
    first.kill();
    let second = Server::start(&root, &[], SHORT);
    let (pending_id, _) = submit(&second.url, &census_task(0, 1_000, 100));

    assert_eq!(
        state_and_result(&second.url, &ours_id),
        ("TASK_STATE_COMPLETED".into(), census::expected(0, 20_000, 2_000))
    );
    assert_eq!(
        state_and_result(&second.url, &ref_id),
        ("TASK_STATE_COMPLETED".into(), census::expected(0, 30_000, 3_000))
    );
    assert_eq!(state_and_result(&second.url, &pending_id).0, "TASK_STATE_WORKING");

    // A fresh reference bridge rebuilds the same binding from the store.
    let seen = py(&format!(
        "import json; from dhp.a2a_bridge import DHPBridge\n\
         b = DHPBridge({root_s:?}, bridge_id='ref-bridge-2')\n\
         out = {{}}\n\
         for tid in {ids:?}:\n\
         \x20   t = b.get_task(tid)\n\
         \x20   out[tid] = [b.task_state(tid), [p.text for a in t.artifacts for p in a.parts]]\n\
         print(json.dumps(out))",
        ids = [&ours_id, &ref_id, &pending_id]
    ));
    assert_eq!(seen[&ours_id][0], "TASK_STATE_COMPLETED", "{seen}");
    assert_eq!(seen[&ref_id][0], "TASK_STATE_COMPLETED", "{seen}");
    assert_eq!(seen[&pending_id][0], "TASK_STATE_WORKING", "{seen}");
    let text = seen[&ours_id][1][0].as_str().unwrap();
    assert_eq!(serde_json::from_str::<Value>(text).unwrap(), census::expected(0, 20_000, 2_000));
}
