//! The Rust SDK's own client drives `dhp mcp` as a child process through
//! the whole agent loop: dispatch → claim → checkpoint → heartbeat →
//! complete, and checks the listing an agent plans from.

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

async fn call(c: &RunningService<RoleClient, ()>, tool: &'static str, args: Value) -> Value {
    let Value::Object(args) = args else { panic!("arguments must be an object") };
    let res = c.call_tool(CallToolRequestParams::new(tool).with_arguments(args)).await.expect("tools/call");
    assert_ne!(res.is_error, Some(true), "{tool} answered an MCP error: {res:?}");
    let t = res.content[0].as_text().unwrap_or_else(|| panic!("{tool}: not text: {res:?}"));
    let v: Value = serde_json::from_str(&t.text).expect("reply is JSON");
    assert_eq!(res.structured_content, Some(json!({"result": t.text})), "{tool}: structuredContent");
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_sdk_client_runs_the_agent_loop() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_dhp"));
    cmd.args(["mcp", "--root"]).arg(dir.path()).env("DHP_LOG", "info");
    let (transport, _stderr) =
        TokioChildProcess::builder(cmd).stderr(std::process::Stdio::null()).spawn().expect("spawn dhp mcp");
    let c = ().serve(transport).await.expect("initialize");

    let info = c.peer_info().expect("server info");
    assert_eq!(info.server_info.as_ref().map(|i| i.name.as_str()), Some("dhp"));
    let tools = c.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "dhp_dispatch",
            "dhp_claim",
            "dhp_checkpoint",
            "dhp_heartbeat",
            "dhp_complete",
            "dhp_recover",
            "dhp_status",
            "dhp_last_checkpoint",
            "dhp_health",
            "dhp_record_effect",
            "dhp_effect_done",
            "dhp_note_spend",
            "dhp_note_activity",
            "dhp_request_approval",
            "dhp_approval_status",
            "dhp_require_capability",
        ]
    );
    for t in &tools {
        assert!(t.description.as_deref().is_some_and(|d| d.len() > 60), "{}: description", t.name);
        for (p, s) in t.input_schema["properties"].as_object().unwrap() {
            assert!(s["description"].as_str().is_some_and(|d| !d.is_empty()), "{}.{p}: description", t.name);
        }
    }

    let d = call(
        &c,
        "dhp_dispatch",
        json!({"task_kind": "demo.sum", "inputs": {"xs": [1, 2, 3]},
        "output_schema": {"type": "object", "required": ["sum"]}}),
    )
    .await;
    assert_eq!(d["ok"], true, "{d}");
    let hid = d["handoff_id"].as_str().unwrap().to_string();
    let w = json!({"handoff_id": hid, "worker_id": "agent-1"});
    let claim = call(&c, "dhp_claim", w.clone()).await;
    assert_eq!(claim, json!({"ok": true, "fence": 0, "resume_from": null}));
    // A worker id this session did not claim with is fenced out.
    let other = call(&c, "dhp_heartbeat", json!({"handoff_id": hid, "worker_id": "agent-2"})).await;
    assert_eq!(
        other,
        json!({"ok": false, "error": format!("agent-2 did not claim or recover {} in this session: only the session that did may act for it", &hid[..12]), "code": "FencingError"})
    );
    for (n, partial) in [1, 3, 6].into_iter().enumerate() {
        let mut a = w.clone();
        a["state"] = json!({"i": n + 1, "partial": partial});
        assert_eq!(call(&c, "dhp_checkpoint", a).await, json!({"ok": true, "seq": n}));
        assert_eq!(call(&c, "dhp_heartbeat", w.clone()).await, json!({"ok": true}));
    }
    assert_eq!(
        call(&c, "dhp_last_checkpoint", json!({"handoff_id": hid})).await,
        json!({"ok": true, "state": {"i": 3, "partial": 6}})
    );
    // A result that misses the schema is refused and parks the handoff as failed;
    // so complete the right one first, then check a repeat is a no-op.
    let mut done = w.clone();
    done["result"] = json!({"sum": 6});
    assert_eq!(call(&c, "dhp_complete", done.clone()).await, json!({"ok": true}));
    assert_eq!(call(&c, "dhp_complete", done).await, json!({"ok": true}));
    let st = call(&c, "dhp_status", json!({"handoff_id": hid})).await;
    assert_eq!(st["status"], "completed");
    assert_eq!(st["result"], json!({"sum": 6}));
    assert_eq!(st["checkpoints"], 3);
    assert_eq!(st["owner"], Value::Null);
    let h = call(&c, "dhp_health", json!({})).await;
    assert_eq!(h, json!({"ok": true, "handoffs": 1, "lease_ttl_s": 6.0}));
    c.cancel().await.expect("close");
}
