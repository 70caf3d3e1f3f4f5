//! `dhp mcp` answers every line (issue 33, item 18): a line that is not
//! JSON, JSON nested too deep, and a line over 16 MiB each get a JSON-RPC
//! error (id null) instead of silence, and the session goes on. And
//! `dhp mcp --root MISSING` refuses a missing store, as `dhp a2a` does.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

#[test]
fn every_bad_line_gets_an_answer_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dhp"))
        .args(["mcp", "--root"])
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let v = serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {line:?}"));
            if tx.send(v).is_err() {
                break;
            }
        }
    });
    let mut answer = |line: &[u8]| -> Value {
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
        if line.starts_with(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/") {
            return Value::Null;
        }
        rx.recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no answer to {:?}", String::from_utf8_lossy(&line[..line.len().min(60)])))
    };

    let big =
        format!(r#"{{"jsonrpc":"2.0","id":5,"method":"ping","params":{{"pad":"{}"}}}}"#, "x".repeat((16 << 20) + 10));
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    for (line, code) in [
        (&b"hello, not json"[..], -32700),
        (b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ", -32700),
        (b"\xff\xfe\xfd", -32700),
        (deep.as_bytes(), -32700),
        (big.as_bytes(), -32600),
    ] {
        let v = answer(line);
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        assert_eq!(v["id"], Value::Null, "{v}");
        assert_eq!(v["error"]["code"], code, "{v}");
    }

    // The session still starts and serves.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}});
    let v = answer(init.to_string().as_bytes());
    assert_eq!(v["id"], 1, "{v}");
    assert_eq!(v["result"]["serverInfo"]["name"], "dhp", "{v}");
    answer(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    assert_eq!(answer(b"not json after init")["error"]["code"], -32700);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "dhp_health", "arguments": {}}});
    let v = answer(call.to_string().as_bytes());
    assert_eq!(v["id"], 2, "{v}");
    let text = v["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(serde_json::from_str::<Value>(text).unwrap()["ok"], true);

    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
}

#[test]
fn a_missing_store_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-store");
    let out = Command::new(env!("CARGO_BIN_EXE_dhp"))
        .args(["mcp", "--root"])
        .arg(&missing)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(11), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!missing.exists(), "dhp mcp created {}", missing.display());
    // --create makes one, as for dhp a2a (then the session ends at once:
    // stdin is empty).
    let out = Command::new(env!("CARGO_BIN_EXE_dhp"))
        .args(["mcp", "--create", "--root"])
        .arg(&missing)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(missing.join("dhp.sqlite3").exists(), "{}", String::from_utf8_lossy(&out.stderr));
}
