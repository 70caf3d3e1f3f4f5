//! `dhp a2a` is safe by default (issue 33, item 4): it will not start
//! without a token unless told so by name (and then warns at every start);
//! it refuses a Host header that does not name it (DNS rebinding), a
//! browser request from a foreign Origin, and JSON-RPC that is not
//! `application/json` (a web page's blind `text/plain` or form POST: CSRF).
//! Every refused request leaves the store unchanged.
use crate::a2a_support::*;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LIST: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}"#;
const SEND: &[u8] = br#"{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"inputs":{"lo":0,"hi":100,"chunk":10}}}]},"configuration":{"returnImmediately":true}}}"#;

fn task_count(port: u16) -> usize {
    let (status, v) = rpc_raw(port, LIST, &[]);
    assert_eq!(status, 200, "{v}");
    v["result"]["tasks"].as_array().map(Vec::len).unwrap_or_else(|| panic!("no task list: {v}"))
}

#[test]
fn no_token_is_refused_unless_opted_out_by_name_and_then_warned_every_start() {
    let dir = tempfile::tempdir().unwrap();
    let root = new_store(dir.path());
    let mut child = Command::new(dhp_bin())
        .args(["a2a", "--root"])
        .arg(&root)
        .args(["--host", "127.0.0.1", "--port", "0"])
        .env_remove("DHP_A2A_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(20);
    let code = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code();
        }
        if Instant::now() > end {
            let _ = child.kill();
            panic!("dhp a2a without a token kept running (it serves anyone)");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--insecure-no-token") && err.contains("--token"), "{err}");
    assert!(!out.contains("listening"), "{out}");

    // Opted out by name: it serves, and says so on stderr at every start.
    for _ in 0..2 {
        let mut child = Command::new(dhp_bin())
            .args(["a2a", "--root"])
            .arg(&root)
            .args(["--host", "127.0.0.1", "--port", "0", "--insecure-no-token"])
            .env_remove("DHP_A2A_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
        assert!(first.contains("listening"), "{first:?}");
        let mut warn = String::new();
        BufReader::new(child.stderr.take().unwrap()).read_line(&mut warn).unwrap();
        let _ = child.kill();
        let _ = child.wait();
        assert!(warn.contains("WARNING") && warn.contains("--insecure-no-token"), "{warn:?}");
    }
}

#[test]
fn foreign_hosts_origins_and_content_types_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = new_store(dir.path());
    // Without a token, so that only the new checks stand between a web
    // page and the store.
    let srv = Server::start(&root, &["--insecure-no-token", "--allow-host", "agents.example"], SHORT);
    let p = srv.port;
    let own = format!("http://127.0.0.1:{p}");
    let evil_host = format!("evil.example:{p}");
    let loopback_name = format!("localhost:{p}");
    let allowed_name = format!("agents.example:{p}");
    let allowed_origin = format!("http://agents.example:{p}");
    assert_eq!(task_count(p), 0);

    let refused: Vec<(Vec<(&str, &str)>, u16)> = vec![
        // CSRF: a page's blind POSTs, with and without an Origin.
        (vec![("Content-Type", "text/plain"), ("Origin", "http://evil.example")], 403),
        (vec![("Content-Type", "text/plain;charset=UTF-8")], 415),
        (vec![("Content-Type", "application/x-www-form-urlencoded")], 415),
        (vec![("Content-Type", "multipart/form-data; boundary=x")], 415),
        (vec![("Content-Type", "")], 415),
        (vec![("Origin", "http://evil.example")], 403),
        (vec![("Origin", "null")], 403),
        (vec![("Origin", "http://localhost:3000")], 403),
        (vec![("Origin", "https://127.0.0.1")], 403),
        (vec![("Sec-Fetch-Site", "cross-site")], 403),
        // The allowed name on another port is another origin.
        (vec![("Host", allowed_name.as_str()), ("Origin", "http://agents.example")], 403),
        // DNS rebinding: our address under a foreign name.
        (vec![("Host", evil_host.as_str())], 403),
        (vec![("Host", "evil.example")], 403),
        (vec![("Host", "127.0.0.1.evil.example")], 403),
    ];
    for (headers, want) in &refused {
        let (status, v) = rpc_raw(p, SEND, headers);
        assert_eq!(status, *want, "{headers:?}: {v}");
        assert_eq!(v["error"]["code"], -32600, "{headers:?}: {v}");
    }
    // A missing Host is not this server's name either.
    let (status, _, _) = http(p, "POST", "/", &[("Host", ""), ("Content-Type", "application/json")], SEND);
    assert_eq!(status, 403);
    // The card is not served under a foreign name either.
    assert_eq!(http(p, "GET", "/.well-known/agent-card.json", &[("Host", evil_host.as_str())], b"").0, 403);
    assert_eq!(task_count(p), 0, "a refused request created a task");

    // Our own origin, the loopback names and an --allow-host name are served.
    let served: Vec<Vec<(&str, &str)>> = vec![
        vec![("Origin", own.as_str())],
        vec![("Host", loopback_name.as_str())],
        vec![("Host", allowed_name.as_str()), ("Origin", allowed_origin.as_str())],
        vec![("Content-Type", "application/json; charset=utf-8"), ("Sec-Fetch-Site", "same-origin")],
    ];
    for headers in &served {
        let (status, v) = rpc_raw(p, SEND, headers);
        assert_eq!(status, 200, "{headers:?}: {v}");
        assert!(v["result"]["task"]["id"].is_string(), "{headers:?}: {v}");
    }
    assert_eq!(task_count(p), 4);
    let (status, _, body) = http(p, "GET", "/.well-known/agent-card.json", &[("Host", loopback_name.as_str())], b"");
    assert_eq!(status, 200);
    let card: Value = serde_json::from_slice(&body).unwrap();
    assert!(card.get("securitySchemes").is_none(), "{card}");
}
