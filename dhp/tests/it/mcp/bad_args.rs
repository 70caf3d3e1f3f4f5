//! Bad arguments for every tool: a missing argument and a value of each
//! wrong JSON type for every parameter, then well-typed values the
//! protocol refuses. Every one answers a typed `{"ok": false}` reply, the
//! server keeps serving (no panic), and the store is left unchanged.
use crate::mcp_support::{ours, py_session};

#[test]
fn every_tool_refuses_bad_arguments_with_a_typed_reply() {
    let dir = tempfile::tempdir().unwrap();
    // Small payload limits so the oversize cases stay small.
    let env =
        [("DHP_MAX_CHECKPOINT_BYTES", "4096"), ("DHP_MAX_RESULT_BYTES", "4096"), ("DHP_MAX_ENVELOPE_BYTES", "16384")];
    let s = py_session(&[vec!["badargs".into(), "--".into()], ours(dir.path())].concat(), &env);
    let steps = s["steps"].as_array().unwrap();
    // 18 tools × their parameters × 5 bad values, plus the refused values.
    assert!(steps.len() > 200, "only {} bad calls ran", steps.len());
    for e in steps {
        let label = e["label"].as_str().unwrap();
        assert_eq!(e["is_error"], false, "{label}: {e}");
        let r = &e["reply"];
        assert_eq!(r["ok"], false, "{label} was accepted: {r}");
        let code = r["code"].as_str().unwrap_or_default();
        // Not "result: null" (= not done, fire it) for a handoff that does not exist.
        let want: &[&str] = if label == "effect_done unknown hid" {
            &["UnknownHandoff"]
        } else {
            &["ValidationError", "OversizePayload"]
        };
        assert!(want.contains(&code), "{label}: code {code}: {r}");
        assert!(r["error"].as_str().is_some_and(|m| !m.is_empty()), "{label}: no message");
    }
    // Nothing reached the store: the claimed handoff is as it was.
    let st = &s["final_status"];
    assert_eq!(st["status"], "running");
    assert_eq!(st["checkpoints"], 0);
    assert_eq!(st["effects"], 0);
    assert_eq!(st["approvals"], serde_json::json!([]));
    assert_eq!(st["spend_usd"], 0.0);
    assert_eq!(s["handoffs"], 1, "a bad dispatch was stored");
}
