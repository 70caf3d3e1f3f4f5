//! Errors as the official SDK client sees them: bad task payloads are
//! InvalidParams, follow-ups to existing tasks are UnsupportedOperation, and
//! with a bearer token configured a client without it is refused while one
//! with it is served. Nothing refused reaches the store.
use crate::a2a_support::*;

fn handoffs(root: &std::path::Path) -> usize {
    let c = rusqlite::Connection::open(root.join("dhp.sqlite3")).unwrap();
    c.query_row("SELECT COUNT(*) FROM handoffs", [], |r| r.get::<_, i64>(0)).unwrap() as usize
}

#[test]
fn sdk_sees_typed_errors_and_the_token_is_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let root = new_store(dir.path());
    let srv = Server::start(&root, &["--token", "s3cret"], SHORT);
    let before = handoffs(&root);

    // The card is public; it advertises the bearer scheme.
    let card = &sdk_ok(&srv.url, &["card"])[0];
    assert_eq!(card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"], "Bearer", "{card}");

    // No token, wrong token: refused (HTTP 401).
    let msg = sdk_err(&srv.url, &["send", &census_task(0, 100, 10), "--token", ""], "A2AClientError");
    assert!(msg.contains("401"), "{msg}");
    let msg = sdk_err(&srv.url, &["send", &census_task(0, 100, 10), "--token", "wrong"], "A2AClientError");
    assert!(msg.contains("401"), "{msg}");

    let t = ["--token", "s3cret"];
    let bad = |task: &str| sdk_err(&srv.url, &["send", task, t[0], t[1]], "InvalidParamsError");
    assert!(bad(r#"{"inputs": {"lo": 10, "hi": 5, "chunk": 1}}"#).contains("LO < HI"));
    assert!(bad(r#"{"inputs": {"lo": 0, "hi": 100}}"#).contains("chunk"));
    assert!(bad(r#"{"inputs": {"lo": -1, "hi": 100, "chunk": 1}}"#).contains("lo"));
    assert!(bad(r#"{"inputs": {"lo": 0, "hi": 20000000000, "chunk": 1}}"#).contains("HI"));
    assert!(bad(r#"{"kind": 7}"#).contains("kind"));
    assert!(bad(r#"{"kind": "x", "inputs": [1]}"#).contains("inputs"));
    assert!(bad(r#"{"kind": "x", "budget": {"max_steps": 0}}"#).contains("budget"));
    assert!(bad(r#"{"kind": "x", "output_schema": 3}"#).contains("output_schema"));
    assert!(bad(r#"{"inputs": {"lo": 0, "hi": 10, "chunk": 1}, "extra": 1}"#).contains("extra"));
    assert_eq!(handoffs(&root), before, "a refused task reached the store");

    // A good one with the token; then a follow-up message to it.
    let lines = sdk_ok(&srv.url, &["send", &census_task(0, 100, 10), "--immediate", t[0], t[1]]);
    let tid = lines[0]["task"]["id"].as_str().unwrap().to_string();
    sdk_err(&srv.url, &["send", &census_task(0, 100, 10), "--task-id", &tid, t[0], t[1]], "UnsupportedOperationError");
    sdk_err(&srv.url, &["send", &census_task(0, 100, 10), "--task-id", "task-nope", t[0], t[1]], "TaskNotFoundError");
    assert_eq!(handoffs(&root), before + 1);

    // A non-census kind with its own schema is accepted as given.
    let lines = sdk_ok(
        &srv.url,
        &[
            "send",
            r#"{"kind": "echo", "inputs": {"x": 1}, "output_schema": {"type": "object"}}"#,
            "--immediate",
            t[0],
            t[1],
        ],
    );
    assert_eq!(lines[0]["task"]["metadata"]["dhp_kind"], "echo");
}
