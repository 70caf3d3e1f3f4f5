//! Overflowing a budget counter never erases an overrun (issue 33 item 9):
//! budget arithmetic is checked, and a sum that does not fit (steps past
//! i64) or is not finite (spend past f64) is recorded at the counter's
//! limit and is an overrun, for the caller and for the supervisor. Before,
//! `note_spend(1e308)` twice stored the spend as `null` and answered ok,
//! and `note_step(2^62)` three times left the steps at -4.6e18.
use crate::common::SCHEMA_X;
use dhp_core::budget::{SPEND_LIMIT, STEPS_LIMIT};
use dhp_core::envelope::{self, BuildOptions};
use dhp_core::supervisor::Supervisor;
use dhp_core::{Config, Error, Runner};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

fn dispatch(r: &Runner) -> String {
    let env = envelope::build(
        "t",
        json!({"inline": {"n": 1}}),
        serde_json::from_str(SCHEMA_X).unwrap(),
        BuildOptions::default(),
    )
    .unwrap();
    r.dispatch(&env).unwrap()
}

fn execution(r: &Runner, hid: &str) -> Value {
    r.envelope(hid).unwrap()["execution"].clone()
}

fn killed(dir: &std::path::Path, hid: &str) -> bool {
    let sup = Supervisor::open(dir, "sup", Config::default()).unwrap();
    sup.scan().unwrap().iter().any(|a| a.kind().as_str() == "budget-killed" && a.hid() == hid)
}

#[test]
fn steps_past_i64_stay_an_overrun() {
    let dir = tempfile::tempdir().unwrap();
    let r = Runner::open(dir.path(), "w", Config::default()).unwrap();
    let hid = dispatch(&r);
    let ctx = r.claim(&hid).unwrap();
    for _ in 0..3 {
        assert!(matches!(ctx.note_step(1 << 62), Err(Error::BudgetExceeded { .. })));
    }
    assert_eq!(execution(&r, &hid)["steps"], json!(STEPS_LIMIT));
    // And through the checkpoint path, on a counter already at the limit.
    let step = ctx.checkpoint_step(&json!({"i": 1}), 1).unwrap();
    assert!(step.over_budget.is_some());
    assert_eq!(execution(&r, &hid)["steps"], json!(STEPS_LIMIT));
    assert!(killed(dir.path(), &hid), "the supervisor did not fail the overrun");
}

#[test]
fn spend_past_f64_stays_an_overrun() {
    let dir = tempfile::tempdir().unwrap();
    let r = Runner::open(dir.path(), "w", Config::default()).unwrap();
    let hid = dispatch(&r);
    let ctx = r.claim(&hid).unwrap();
    for _ in 0..2 {
        assert!(matches!(ctx.note_spend(1e308), Err(Error::BudgetExceeded { .. })));
    }
    assert_eq!(execution(&r, &hid)["spend_usd"], json!(SPEND_LIMIT));
    assert!(killed(dir.path(), &hid), "the supervisor did not fail the overrun");
}

async fn call(c: &RunningService<RoleClient, ()>, tool: &'static str, args: Value) -> Value {
    let Value::Object(args) = args else { panic!("arguments must be an object") };
    let res = c.call_tool(CallToolRequestParams::new(tool).with_arguments(args)).await.expect("tools/call");
    let t = res.content[0].as_text().unwrap_or_else(|| panic!("{tool}: not text: {res:?}"));
    serde_json::from_str(&t.text).expect("reply is JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_note_spend_twice_past_f64_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_dhp"));
    cmd.args(["mcp", "--root"]).arg(dir.path());
    let (transport, _stderr) =
        TokioChildProcess::builder(cmd).stderr(std::process::Stdio::null()).spawn().expect("spawn dhp mcp");
    let c = ().serve(transport).await.expect("initialize");
    let d = call(
        &c,
        "dhp_dispatch",
        json!({"task_kind": "demo.sum", "inputs": {"xs": [1]}, "output_schema": {"type": "object"}}),
    )
    .await;
    let hid = d["handoff_id"].as_str().unwrap().to_string();
    let w = json!({"handoff_id": hid, "worker_id": "agent-1"});
    assert_eq!(call(&c, "dhp_claim", w.clone()).await["ok"], true);
    let mut spend = w.clone();
    spend["usd"] = json!(1e308);
    for n in 0..3 {
        let r = call(&c, "dhp_note_spend", spend.clone()).await;
        assert_eq!(r["code"], "BudgetExceeded", "call {n}: {r}");
    }
    c.cancel().await.expect("close");
    let r = Runner::open(dir.path(), "reader", Config::default()).unwrap();
    assert_eq!(execution(&r, &hid)["spend_usd"], json!(SPEND_LIMIT));
    assert!(killed(dir.path(), &hid), "the supervisor did not fail the overrun");
}
