//! `dhp mcp` separates the decision from the requester and binds worker
//! ids to sessions (issue 33, item 5): an agent's session is not offered
//! `dhp_approve`/`dhp_deny` (its own financial request stays pending); only
//! a `--decider` session decides, and it is offered no worker tool. A
//! session that did not claim a handoff with a worker id cannot act under
//! it: every lease tool answers FencingError and nothing is stored.

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

type Client = RunningService<RoleClient, ()>;

async fn session(root: &std::path::Path, extra: &[&str]) -> Client {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_dhp"));
    cmd.args(["mcp", "--root"]).arg(root).args(extra);
    let (transport, _) =
        TokioChildProcess::builder(cmd).stderr(std::process::Stdio::null()).spawn().expect("spawn dhp mcp");
    ().serve(transport).await.expect("initialize")
}

/// (isError, reply: the JSON object, or the text when it is not JSON).
async fn call(c: &Client, tool: &str, args: Value) -> (bool, Value) {
    let Value::Object(args) = args else { panic!("arguments must be an object") };
    let res = c.call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args)).await.expect("tools/call");
    let text = res.content[0].as_text().unwrap_or_else(|| panic!("{tool}: not text: {res:?}")).text.clone();
    let v = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (res.is_error == Some(true), v)
}

async fn names(c: &Client) -> Vec<String> {
    c.list_all_tools().await.expect("tools/list").iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_and_worker_ids_belong_to_their_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let agent = session(dir.path(), &[]).await;
    let intruder = session(dir.path(), &[]).await;

    let listed = names(&agent).await;
    assert!(!listed.iter().any(|n| n == "dhp_approve" || n == "dhp_deny"), "{listed:?}");
    assert_eq!(listed.len(), 16, "{listed:?}");

    let (_, d) = call(&agent, "dhp_dispatch", json!({"task_kind": "pay", "inputs": {}, "output_schema": {}})).await;
    let hid = d["handoff_id"].as_str().unwrap().to_string();
    let w1 = json!({"handoff_id": hid, "worker_id": "w1"});
    assert_eq!(call(&agent, "dhp_claim", w1.clone()).await.1["ok"], true);

    // The agent asks, and cannot answer itself.
    let mut req = w1.clone();
    req["action_class"] = json!("financial");
    req["details"] = json!({"usd": 1_000_000});
    let (_, ap) = call(&agent, "dhp_request_approval", req).await;
    let aid = ap["approval_id"].as_str().unwrap().to_string();
    for tool in ["dhp_approve", "dhp_deny"] {
        let (is_error, reply) = call(&agent, tool, json!({"approval_id": aid})).await;
        assert!(is_error, "{tool}: {reply}");
        assert_eq!(reply, json!(format!("Unknown tool: {tool}")));
    }
    assert_eq!(call(&agent, "dhp_approval_status", json!({"approval_id": aid})).await.1["status"], "pending");

    // Another session presents w1, which it never claimed with.
    let with = |extra: Value| {
        let mut a = w1.clone();
        a.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        a
    };
    let cases = [
        ("dhp_checkpoint", with(json!({"state": {"n": 666}}))),
        ("dhp_heartbeat", w1.clone()),
        ("dhp_record_effect", with(json!({"step_id": "pay-1", "result": {"paid": true}}))),
        ("dhp_note_spend", with(json!({"usd": 1.0}))),
        ("dhp_note_activity", with(json!({"digest": "d"}))),
        ("dhp_request_approval", with(json!({"action_class": "read", "details": {}}))),
        ("dhp_require_capability", with(json!({"domain": "dhp", "resource": "r"}))),
        ("dhp_complete", with(json!({"result": {"forged": true}}))),
    ];
    for (tool, args) in cases {
        let (is_error, r) = call(&intruder, tool, args).await;
        assert!(!is_error, "{tool}: {r}");
        assert_eq!(r["code"], "FencingError", "{tool}: {r}");
        assert!(r["error"].as_str().unwrap().contains("did not claim or recover"), "{tool}: {r}");
    }
    let (_, st) = call(&agent, "dhp_status", json!({"handoff_id": hid})).await;
    assert_eq!(st["status"], "running", "{st}");
    assert_eq!(st["checkpoints"], 0, "{st}");
    assert_eq!(st["effects"], 0, "{st}");
    assert_eq!(st["spend_usd"], 0.0, "{st}");
    assert_eq!(st["approvals"].as_array().map(Vec::len), Some(1), "{st}");

    // The decider: the decisions and the reads it needs, no worker tool.
    let decider = session(dir.path(), &["--decider"]).await;
    assert_eq!(names(&decider).await, ["dhp_status", "dhp_health", "dhp_approval_status", "dhp_approve", "dhp_deny"]);
    let (is_error, _) = call(&decider, "dhp_claim", json!({"handoff_id": hid, "worker_id": "d1"})).await;
    assert!(is_error, "a decider session claimed");

    // The owning session works on; the decider decides.
    let mut cp = w1.clone();
    cp["state"] = json!({"n": 1});
    assert_eq!(call(&agent, "dhp_checkpoint", cp).await.1, json!({"ok": true, "seq": 0}));
    assert_eq!(
        call(&decider, "dhp_approve", json!({"approval_id": aid})).await.1,
        json!({"ok": true, "decided": true})
    );
    assert_eq!(call(&agent, "dhp_approval_status", json!({"approval_id": aid})).await.1["status"], "approved");
    let mut done = w1.clone();
    done["result"] = json!({});
    assert_eq!(call(&agent, "dhp_complete", done).await.1, json!({"ok": true}));

    for c in [agent, intruder, decider] {
        c.cancel().await.expect("close");
    }
}
