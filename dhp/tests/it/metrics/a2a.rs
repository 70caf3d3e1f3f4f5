//! `dhp a2a --metrics`: three tasks submitted, one canceled, one
//! connection over `--max-connections` refused (HTTP 503); the scrape
//! counts exactly those, with the supervisor and worker families beside.
use crate::a2a_support::*;
use crate::metrics_support::{free_port, http_get};
use dhp_testkit::http_limits::refused;
use serde_json::json;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Sample lines of an exposition, `name{labels}` → value.
fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(' ')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

#[test]
fn a2a_metrics_count_submits_cancels_and_refused_connections() {
    let dir = tempfile::tempdir().unwrap();
    let root = new_store(dir.path());
    let maddr = format!("127.0.0.1:{}", free_port());
    let srv = Server::start(&root, &["--metrics", &maddr, "--max-connections", "2", "--header-timeout", "20"], &[]);
    let mut tids = Vec::new();
    for lo in [0u64, 10_000, 20_000] {
        let body = json!({"jsonrpc": "2.0", "id": lo, "method": "SendMessage", "params": {
            "message": {"messageId": format!("m{lo}"), "role": "ROLE_USER",
                        "parts": [{"data": {"inputs": {"lo": lo, "hi": lo + 5000, "chunk": 1000}}}]},
            "configuration": {"returnImmediately": true}}});
        let (status, v) = rpc_raw(srv.port, body.to_string().as_bytes(), &[]);
        assert_eq!(status, 200, "{v}");
        tids.push(v["result"]["task"]["id"].as_str().unwrap_or_else(|| panic!("{v}")).to_string());
    }
    let cancel = json!({"jsonrpc": "2.0", "id": 9, "method": "CancelTask", "params": {"id": tids[0]}});
    let (_, v) = rpc_raw(srv.port, cancel.to_string().as_bytes(), &[]);
    assert_eq!(v["result"]["status"]["state"], "TASK_STATE_CANCELED", "{v}");
    // A second cancel of the same task is refused and changes nothing.
    let (_, v) = rpc_raw(srv.port, cancel.to_string().as_bytes(), &[]);
    assert!(v["error"].is_object(), "{v}");
    // Two idle connections fill --max-connections 2; a third gets 503.
    let _held: Vec<std::net::TcpStream> =
        (0..2).map(|_| std::net::TcpStream::connect(("127.0.0.1", srv.port)).unwrap()).collect();
    let end = Instant::now() + Duration::from_secs(10);
    let (status, _, _) = loop {
        let r = http(srv.port, "GET", "/.well-known/agent-card.json", &[], b"");
        if r.0 == 503 || Instant::now() > end {
            break r;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status, 503);
    // A connection of an earlier request may still count a moment after it
    // closed: then a held one was refused too. Every 503 is counted.
    let held_refused = _held.iter().filter(|c| refused(c)).count() as f64;
    let (code, text) = http_get(&maddr, "/metrics").unwrap();
    assert_eq!(code, 200);
    let s = samples(&text);
    let get = |k: &str| *s.get(k).unwrap_or_else(|| panic!("{k} missing:\n{text}"));
    assert_eq!(get(r#"dhp_a2a_tasks_total{state="submitted"}"#), 3.0);
    assert_eq!(get(r#"dhp_a2a_tasks_total{state="canceled"}"#), 1.0);
    assert_eq!(get(r#"dhp_a2a_connections_refused_total{reason="busy"}"#), 1.0 + held_refused);
    // No pool workers: nothing checkpointed; the embedded supervisor scans.
    assert_eq!(get("dhp_checkpoints_total"), 0.0);
    assert!(get("dhp_scans_total") >= 1.0);
    assert!(!s.keys().any(|k| k.starts_with("dhp_transport_")));
}
