//! An approval left pending past its expiry reads as `expired` through
//! `dhp_approval_status` (and is stored so), never as `pending`, so an agent
//! polling it stops waiting; approving it afterwards records nothing.

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

async fn call(c: &RunningService<RoleClient, ()>, tool: &'static str, args: Value) -> Value {
    let Value::Object(args) = args else { panic!("arguments must be an object") };
    let res = c.call_tool(CallToolRequestParams::new(tool).with_arguments(args)).await.expect("tools/call");
    let t = res.content[0].as_text().unwrap_or_else(|| panic!("{tool}: not text: {res:?}"));
    serde_json::from_str(&t.text).expect("reply is JSON")
}

async fn session(root: &std::path::Path, extra: &[&str]) -> RunningService<RoleClient, ()> {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_dhp"));
    cmd.args(["mcp", "--root"]).arg(root).args(extra);
    let (transport, _) =
        TokioChildProcess::builder(cmd).stderr(std::process::Stdio::null()).spawn().expect("spawn dhp mcp");
    ().serve(transport).await.expect("initialize")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_approval_past_expiry_reads_expired() {
    let dir = tempfile::tempdir().unwrap();
    let c = session(dir.path(), &[]).await;

    let d = call(&c, "dhp_dispatch", json!({"task_kind": "pay", "inputs": {}, "output_schema": {}})).await;
    let hid = d["handoff_id"].as_str().unwrap().to_string();
    call(&c, "dhp_claim", json!({"handoff_id": hid, "worker_id": "w1"})).await;
    let ap = call(
        &c,
        "dhp_request_approval",
        json!({"handoff_id": hid, "worker_id": "w1",
        "action_class": "financial", "details": {"usd": 10}}),
    )
    .await;
    let aid = ap["approval_id"].as_str().unwrap().to_string();
    assert_eq!(call(&c, "dhp_approval_status", json!({"approval_id": aid})).await["status"], "pending");

    // The 300 s timeout passes (simulated: the row's expiry moves to the past).
    let db = rusqlite::Connection::open(dir.path().join("dhp.sqlite3")).unwrap();
    db.execute("UPDATE approvals SET expires_at = 1.0 WHERE approval_id = ?1", [&aid]).unwrap();

    let st = call(&c, "dhp_approval_status", json!({"approval_id": aid})).await;
    assert_eq!(st, json!({"ok": true, "status": "expired", "action_class": "financial"}));
    let stored: String =
        db.query_row("SELECT status FROM approvals WHERE approval_id = ?1", [&aid], |r| r.get(0)).unwrap();
    assert_eq!(stored, "expired");
    // The decider (its own session) comes too late.
    let decider = session(dir.path(), &["--decider"]).await;
    assert_eq!(call(&decider, "dhp_approve", json!({"approval_id": aid})).await, json!({"ok": true, "decided": false}));
    decider.cancel().await.expect("close");
    c.cancel().await.expect("close");
}
