//! The official Python MCP client runs one scripted session against the
//! reference's `dhp-mcp` and against `dhp mcp`: the same tools (names,
//! parameters, types), and the same replies step by step — except where the
//! reference answers against the protocol, listed in DIFFERENCES (and in
//! docs/mcp.md), where each side must answer exactly as written there.
use crate::mcp_support::{ours, ours_decider, py_session, reference, step};
use serde_json::{json, Value};

/// (step label, the reference's reply, ours). Replies are normalized by
/// the driver: ids → <hid>/<aid>, times → <t>, error messages → <msg>.
fn differences() -> Vec<(&'static str, Value, Value)> {
    vec![
        // Protocol: every mutation checks the lease holder.
        (
            "effect non-holder",
            json!({"ok": true, "recorded": true}),
            json!({"ok": false, "error": "<msg>", "code": "FencingError"}),
        ),
        // Spend is a cost: a negative amount would hide an overrun.
        ("spend negative", json!({"ok": true}), json!({"ok": false, "error": "<msg>", "code": "ValidationError"})),
        // An unknown id is bad input, not a server fault.
        (
            "approval unknown",
            json!({"ok": false, "error": "<msg>", "code": "InternalError"}),
            json!({"ok": false, "error": "<msg>", "code": "UnknownApproval"}),
        ),
        // The protocol has a typed error for a denied capability.
        (
            "capability denied",
            json!({"ok": false, "error": "<msg>", "code": "InternalError"}),
            json!({"ok": false, "error": "<msg>", "code": "CapabilityDenied"}),
        ),
        // A second complete of a completed handoff is a no-op.
        ("complete again", json!({"ok": false, "error": "<msg>", "code": "FencingError"}), json!({"ok": true})),
        // The requester cannot decide: the decisions are offered only to a
        // `--decider` session (MCP error, as for any tool not offered).
        ("self approve", json!({"ok": true, "decided": true}), json!("Unknown tool: dhp_approve")),
        (
            "approval 3 after self approve",
            json!({"ok": true, "status": "approved", "action_class": "financial"}),
            json!({"ok": true, "status": "pending", "action_class": "financial"}),
        ),
    ]
}

/// The tools only a `--decider` session of ours is offered.
const DECISIONS: &[&str] = &["dhp_approve", "dhp_deny"];

#[test]
fn same_session_same_replies_except_the_listed_differences() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let args = vec!["session".to_string(), "--".into()];
    let r = py_session(&[args.clone(), reference(d1.path())].concat(), &[]);
    let o = py_session(&[args, ours(d2.path()), vec!["--".into()], ours_decider(d2.path())].concat(), &[]);

    assert_eq!(r["protocol_version"], "2025-11-25");
    assert_eq!(o["protocol_version"], "2025-11-25");
    assert_eq!(o["server_name"], r["server_name"]);

    // Tools: same names in the same order, same parameters, types and
    // required lists; ours adds a description to every one. An agent's
    // session of ours is not offered the two decisions.
    let (rt, ot) = (r["tools"].as_array().unwrap(), o["tools"].as_array().unwrap());
    assert_eq!(rt.len(), 18);
    let rt: Vec<&Value> = rt.iter().filter(|t| !DECISIONS.contains(&t["name"].as_str().unwrap())).collect();
    assert_eq!(rt.len(), 16);
    assert_eq!(ot.len(), 16);
    for (a, b) in rt.into_iter().zip(ot) {
        assert_eq!(a["name"], b["name"]);
        let (ai, bi) = (&a["input_schema"], &b["input_schema"]);
        assert_eq!(ai["required"], bi["required"], "{}", a["name"]);
        assert_eq!(ai["title"], bi["title"]);
        let (ap, bp) = (ai["properties"].as_object().unwrap(), bi["properties"].as_object().unwrap());
        assert_eq!(ap.keys().collect::<Vec<_>>(), bp.keys().collect::<Vec<_>>(), "{}", a["name"]);
        for (k, v) in ap {
            assert_eq!(v["type"], bp[k]["type"], "{}.{k}", a["name"]);
            assert_eq!(v["title"], bp[k]["title"], "{}.{k}", a["name"]);
            assert!(
                bp[k]["description"].as_str().is_some_and(|d| d.len() > 20),
                "{}.{k} has no description",
                a["name"]
            );
        }
        assert_eq!(a["output_schema"], b["output_schema"], "{}", a["name"]);
        assert!(b["description"].as_str().is_some_and(|d| d.len() > 60), "{} description too thin", b["name"]);
    }

    let diffs = differences();
    let (rs, os) = (r["steps"].as_array().unwrap(), o["steps"].as_array().unwrap());
    assert_eq!(rs.len(), os.len());
    for (a, b) in rs.iter().zip(os) {
        let label = a["label"].as_str().unwrap();
        assert_eq!(a["label"], b["label"]);
        if let Some((_, want_ref, want_ours)) = diffs.iter().find(|d| d.0 == label) {
            assert_eq!(&a["reply"], want_ref, "reference at {label:?} no longer differs as documented");
            assert_eq!(&b["reply"], want_ours, "ours at {label:?}");
            if label == "self approve" {
                assert_eq!((&a["is_error"], &b["is_error"]), (&json!(false), &json!(true)));
            }
            continue;
        }
        // Later summaries count what the differences stored: compared below.
        let (mut ar, mut br) = (a["reply"].clone(), b["reply"].clone());
        if label == "status running" || label == "status failed" {
            for k in ["effects", "spend_usd"] {
                ar.as_object_mut().unwrap().remove(k);
                br.as_object_mut().unwrap().remove(k);
            }
        }
        assert_eq!(ar, br, "step {label:?}");
        assert_eq!(a["is_error"], b["is_error"], "is_error at {label:?}");
        assert_eq!(a["structured"], b["structured"], "structuredContent at {label:?}");
    }
    // The refused non-holder effect and negative spend are not in our store.
    assert_eq!(step(&o, "status running")["reply"]["effects"], 1);
    assert_eq!(step(&r, "status running")["reply"]["effects"], 2);
    assert_eq!(step(&o, "status running")["reply"]["spend_usd"], 1.5);
    assert_eq!(step(&r, "status running")["reply"]["spend_usd"], -3.5);
}
