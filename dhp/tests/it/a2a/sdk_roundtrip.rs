//! The official a2a-sdk client against `dhp a2a` with its own worker pool:
//! agent card, blocking send, immediate send then poll, streaming send,
//! subscribe and list — every result checked against a recomputed census.
use crate::a2a_support::*;
use dhp_workload::census;

fn expected_text(lo: u64, hi: u64, chunk: u64) -> serde_json::Value {
    census::expected(lo, hi, chunk)
}

/// The result as the artifact's text part carries it (exact integers).
fn artifact_result(task: &serde_json::Value) -> serde_json::Value {
    let text = task["artifacts"][0]["parts"][0]["text"].as_str().expect("text part");
    serde_json::from_str(text).expect("result JSON")
}

#[test]
fn sdk_client_card_send_poll_stream_list() {
    let dir = tempfile::tempdir().unwrap();
    let root = new_store(dir.path());
    let srv = Server::start(&root, &["--workers", "2"], SHORT);

    // The card at the well-known path, as the SDK resolves it.
    let card = &sdk_ok(&srv.url, &["card"])[0];
    assert_eq!(card["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");
    assert_eq!(card["supportedInterfaces"][0]["protocolVersion"], "1.0");
    assert_eq!(card["capabilities"]["streaming"], true);

    // Blocking send: the server answers once the pool completed it.
    let lines = sdk_ok(&srv.url, &["send", &census_task(0, 50_000, 5_000)]);
    let task = &lines[0]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(artifact_result(task), expected_text(0, 50_000, 5_000));

    // Immediate send: SUBMITTED at once, then GetTask until COMPLETED.
    let (tid, hid) = submit(&srv.url, &census_task(100, 40_000, 3_000));
    assert_eq!(hid.len(), 64);
    let watched = sdk_ok(&srv.url, &["watch", &tid, "--timeout", "60"]);
    let last = watched.last().unwrap();
    assert_eq!(last["state"], "TASK_STATE_COMPLETED", "{watched:?}");
    assert_eq!(artifact_result(&last["task"]), expected_text(100, 40_000, 3_000));
    assert_eq!(last["task"]["id"], tid.as_str());
    let got = &sdk_ok(&srv.url, &["get", &tid])[0];
    assert_eq!(got["metadata"]["dhp_handoff_id"], hid.as_str());

    // Streaming send: the Task first, the artifact before COMPLETED, then
    // the stream ends.
    let events = sdk_ok(&srv.url, &["send", &census_task(0, 30_000, 1_000), "--stream"]);
    assert_eq!(events[0]["task"]["status"]["state"], "TASK_STATE_SUBMITTED", "{events:?}");
    let n = events.len();
    assert_eq!(events[n - 1]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED", "{events:?}");
    let art = &events[n - 2]["artifactUpdate"]["artifact"];
    let text = art["parts"][0]["text"].as_str().unwrap();
    assert_eq!(serde_json::from_str::<serde_json::Value>(text).unwrap(), expected_text(0, 30_000, 1_000));
    for e in &events[1..n - 2] {
        assert_eq!(e["statusUpdate"]["status"]["state"], "TASK_STATE_WORKING", "{events:?}");
    }

    // Subscribing to a finished task yields it and ends.
    let sub = sdk_ok(&srv.url, &["subscribe", &tid]);
    assert_eq!(sub.len(), 1);
    assert_eq!(sub[0]["task"]["status"]["state"], "TASK_STATE_COMPLETED");

    // ListTasks: the three A2A tasks, not the store's plain handoff.
    let list = &sdk_ok(&srv.url, &["list"])[0];
    assert_eq!(list["tasks"].as_array().unwrap().len(), 3, "{list}");
}
