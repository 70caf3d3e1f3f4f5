//! Untrusted input on the wire (what no SDK would send): malformed JSON,
//! non-requests, unknown methods, bad params, an unsupported A2A-Version and
//! oversize bodies each get their JSON-RPC error, the request id is echoed
//! where it could be read, and the store is byte-for-byte unchanged.
use crate::a2a_support::*;
use serde_json::{json, Value};

fn dump(root: &std::path::Path) -> String {
    let c = rusqlite::Connection::open(root.join("dhp.sqlite3")).unwrap();
    let mut out = String::new();
    for t in ["handoffs", "checkpoints", "ownership"] {
        let mut st = c.prepare(&format!("SELECT * FROM {t} ORDER BY 1")).unwrap();
        let n = st.column_count();
        let rows = st
            .query_map([], |r| Ok((0..n).map(|i| format!("{:?}", r.get_ref(i).unwrap())).collect::<Vec<_>>().join("|")))
            .unwrap();
        for r in rows {
            out.push_str(&format!("{t}: {}\n", r.unwrap()));
        }
    }
    out
}

fn code(v: &Value) -> i64 {
    v["error"]["code"].as_i64().unwrap_or_else(|| panic!("no error code in {v}"))
}

#[test]
fn malformed_requests_get_protocol_errors_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = new_store(dir.path());
    let srv = Server::start(&root, &["--max-body", "4096"], SHORT);
    let before = dump(&root);
    let p = srv.port;

    let cases: Vec<(&[u8], i64)> = vec![
        (b"{not json", -32700),
        (b"", -32700),
        (b"\xff\xfe", -32700),
        (b"[]", -32600),
        (br#"[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}]"#, -32600),
        (b"42", -32600),
        (br#"{"id":1,"method":"GetTask","params":{"id":"x"}}"#, -32600),
        (br#"{"jsonrpc":"1.0","id":1,"method":"GetTask"}"#, -32600),
        (br#"{"jsonrpc":"2.0","id":1}"#, -32600),
        (br#"{"jsonrpc":"2.0","id":{"a":1},"method":"GetTask"}"#, -32600),
        (br#"{"jsonrpc":"2.0","id":1,"method":"NoSuchMethod","params":{}}"#, -32601),
        (br#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"}}"#, -32601),
        (br#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[1]}"#, -32602),
        (br#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{}}"#, -32602),
        (br#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":5}}"#, -32602),
        (br#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"task-unknown"}}"#, -32001),
        (br#"{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"task-unknown"}}"#, -32001),
        (br#"{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"task-unknown"}}"#, -32001),
        (br#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}"#, -32602),
        (br#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"parts":[]}}}"#, -32602),
        (br#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"parts":[{"text":"hello"}]}}}"#, -32602),
        (br#"{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"parts":[{"data":{"inputs":{"lo":3,"hi":1,"chunk":1}}}]}}}"#, -32602),
        (br#"{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{}}"#, -32003),
    ];
    for (body, want) in &cases {
        let (status, v) = rpc_raw(p, body, &[]);
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(body));
        assert_eq!(code(&v), *want, "{} -> {v}", String::from_utf8_lossy(body));
        assert_eq!(v["jsonrpc"], "2.0");
    }
    // Nesting deeper than the parser's limit is refused, not a crash.
    let deep = "[".repeat(3000);
    let (_, v) = rpc_raw(p, deep.as_bytes(), &[]);
    assert_eq!(code(&v), -32700, "{v}");
    let deep_task = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"SendMessage","params":{{"message":{{"parts":[{{"data":{{"kind":"x","inputs":{{"a":{}1{}}}}}}}]}}}}}}"#,
        "[".repeat(1000),
        "]".repeat(1000)
    );
    let (_, v) = rpc_raw(p, deep_task.as_bytes(), &[]);
    assert_eq!(code(&v), -32700, "{v}");

    // The id is echoed once it could be read.
    let (_, v) = rpc_raw(p, br#"{"jsonrpc":"2.0","id":"abc","method":"Nope"}"#, &[]);
    assert_eq!(v["id"], "abc");

    // A version this server does not speak.
    let (_, v) =
        rpc_raw(p, br#"{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"x"}}"#, &[("A2A-Version", "0.3")]);
    assert_eq!(code(&v), -32009, "{v}");

    // Oversize: refused before parsing, store untouched.
    let big = json!({"jsonrpc": "2.0", "id": 3, "method": "SendMessage",
                     "params": {"message": {"parts": [{"data": {"inputs": {"lo": 0, "hi": 10, "chunk": 1, "pad": "x".repeat(10_000)}}}]}}});
    let (status, v) = rpc_raw(p, big.to_string().as_bytes(), &[]);
    assert_eq!(status, 200);
    assert_eq!(code(&v), -32600, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("too large"), "{v}");

    // Wrong HTTP verbs and paths are HTTP errors, not crashes.
    assert_eq!(http(p, "GET", "/", &[], b"").0, 405);
    assert_eq!(http(p, "GET", "/nope", &[], b"").0, 404);

    assert_eq!(dump(&root), before, "a refused request changed the store");
    // And the server still serves.
    assert_eq!(http(p, "GET", "/.well-known/agent-card.json", &[], b"").0, 200);
}

#[test]
fn bearer_token_is_required_on_json_rpc() {
    let dir = tempfile::tempdir().unwrap();
    let root = new_store(dir.path());
    let srv = Server::start(&root, &[], &[("DHP_A2A_TOKEN", "tok-1")]);
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"task-x"}}"#;
    for auth in [None, Some("Bearer nope"), Some("tok-1"), Some("Basic tok-1"), Some("Bearer tok-1x")] {
        let h = [("Authorization", auth.unwrap_or(""))];
        let (status, v) = rpc_raw(srv.port, body, &h);
        assert_eq!(status, 401, "{auth:?}: {v}");
    }
    let (status, v) = rpc_raw(srv.port, body, &[("Authorization", "Bearer tok-1")]);
    assert_eq!((status, code(&v)), (200, -32001), "{v}");
}
