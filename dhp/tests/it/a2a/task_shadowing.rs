//! A2A task shadowing (issue 33, item 7): a second handoff carrying a
//! task's `a2a_task_id` — its hid sorting first, run to completion with a
//! forged result — never takes the task over, neither on the running
//! server nor after a restart; a task id carried by several handoffs none
//! of which was bound first is refused instead of guessed.
use crate::a2a_support::*;
use dhp_core::envelope::{self, BuildOptions};
use dhp_core::store::{open_root, OpenMode};
use dhp_core::{Config, Runner};
use dhp_workload::census;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// Dispatch a census handoff carrying `task_id`, straight into the store
/// (what any process with the store can do), whose hid sorts before
/// `before` when given. Returns its hid.
fn forge(root: &Path, task_id: &str, hi: u64, before: Option<&str>) -> String {
    let backend = open_root(root, OpenMode::Existing).unwrap().backend;
    let r = Runner::new(backend, "forger", Config::default()).unwrap();
    for chunk in 1..10_000u64 {
        let mut env = envelope::build(
            census::KIND,
            json!({"inline": {"lo": 0, "hi": hi, "chunk": 100 + chunk}}),
            census::output_schema(),
            BuildOptions { created_by: Some(format!("a2a-bridge:{task_id}")), ..Default::default() },
        )
        .unwrap();
        env["provenance"]["a2a_task_id"] = json!(task_id);
        let hid = envelope::handoff_id(&env).unwrap();
        if before.is_some_and(|b| hid.as_str() >= b) {
            continue;
        }
        env["handoff_id"] = json!(hid);
        assert_eq!(r.dispatch(&env).unwrap(), hid);
        return hid;
    }
    panic!("no hid sorting first found");
}

/// The result as the artifact's text part carries it.
fn result(task: &Value) -> Value {
    let text = task["artifacts"][0]["parts"][0]["text"].as_str().unwrap_or("null");
    serde_json::from_str::<Value>(text).unwrap()
}

fn get(url: &str, tid: &str) -> Value {
    sdk_ok(url, &["get", tid])[0].clone()
}

#[test]
fn a_second_handoff_with_the_same_task_id_never_takes_the_task_over() {
    let dir = tempfile::tempdir().unwrap();
    let root = new_store(dir.path());
    let mut srv = Server::start(&root, &["--workers", "1"], SHORT);
    let sent = sdk_ok(&srv.url, &["send", &census_task(0, 1000, 100)]);
    let t = &sent[0]["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t}");
    let tid = t["id"].as_str().unwrap().to_string();
    let real = t["metadata"]["dhp_handoff_id"].as_str().unwrap().to_string();
    let want = census::expected(0, 1000, 100);
    assert_eq!(result(t), want);

    // The forgery: same task id, hid sorting first; the pool completes it
    // (669 primes below 5000).
    let fake = forge(&root, &tid, 5000, Some(&real));
    wait_status(&root, &fake, "the forgery to complete", Duration::from_secs(60), |v| v["status"] == "completed");

    let check = |url: &str, when: &str| {
        let task = get(url, &tid);
        assert_eq!(task["metadata"]["dhp_handoff_id"], real.as_str(), "{when}: {task}");
        assert_eq!(result(&task), want, "{when}: {task}");
        let list = &sdk_ok(url, &["list"])[0]["tasks"];
        let mine: Vec<&Value> = list.as_array().unwrap().iter().filter(|x| x["id"] == tid.as_str()).collect();
        assert_eq!(mine.len(), 1, "{when}: {list}");
        assert_eq!(mine[0]["metadata"]["dhp_handoff_id"], real.as_str(), "{when}");
    };
    check(&srv.url, "running server");
    srv.kill();
    let srv = Server::start(&root, &[], SHORT);
    check(&srv.url, "after a restart");

    // A task id no bridge has bound, carried by two handoffs: refused.
    let orphan_id = "task-0123456789abcdef0123456789abcdef";
    forge(&root, orphan_id, 1000, None);
    forge(&root, orphan_id, 2000, None);
    let body = format!(r#"{{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{{"id":"{orphan_id}"}}}}"#);
    let (status, v) = rpc_raw(srv.port, body.as_bytes(), &[]);
    assert_eq!(status, 200);
    assert_eq!(v["error"]["code"], -32603, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("refusing to guess"), "{v}");

    // A task id carried by one unbound handoff (a reference bridge's
    // task) is bound on first use, and a later copy does not move it.
    let legacy_id = "task-fedcba9876543210fedcba9876543210";
    let first = forge(&root, legacy_id, 1000, None);
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let task = get(&srv.url, legacy_id);
        if task["metadata"]["dhp_handoff_id"] == first.as_str() {
            break;
        }
        assert!(Instant::now() < end, "{task}");
    }
    forge(&root, legacy_id, 3000, Some(&first));
    drop(srv);
    let srv = Server::start(&root, &[], SHORT);
    assert_eq!(get(&srv.url, legacy_id)["metadata"]["dhp_handoff_id"], first.as_str());
}
