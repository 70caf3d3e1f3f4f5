//! Helpers shared by the `a2a_*` integration tests: a real `dhp a2a`
//! process on 127.0.0.1 port 0, the official `a2a-sdk` client
//! (tests/py/a2a_client.py) and raw HTTP for inputs no SDK would send.
#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn dhp_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_dhp"))
}

/// Short leases and fast scans so that a death is noticed within a test.
pub const SHORT: &[(&str, &str)] = &[
    ("DHP_LEASE_INTERVAL_S", "0.3"),
    ("DHP_LEASE_MAX_MISSED", "2"),
    ("DHP_SUPERVISOR_SCAN_S", "0.1"),
    ("DHP_LEADER_TTL_S", "1.0"),
];

/// The bearer token a test server gets unless the test gives its own
/// (`dhp a2a` refuses to start without one unless --insecure-no-token).
pub const TEST_TOKEN: &str = "test-token-5e1f";

/// A census task as the SDK client sends it.
pub fn census_task(lo: u64, hi: u64, chunk: u64) -> String {
    format!(r#"{{"inputs": {{"lo": {lo}, "hi": {hi}, "chunk": {chunk}}}}}"#)
}

/// A `dhp a2a` process; killed (SIGKILL) on drop.
pub struct Server {
    pub child: Child,
    pub url: String,
    pub port: u16,
}

impl Server {
    pub fn start(root: &Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let own_token = extra.iter().any(|a| *a == "--token" || *a == "--insecure-no-token")
            || env.iter().any(|(k, _)| *k == "DHP_A2A_TOKEN");
        let mut cmd = Command::new(dhp_bin());
        cmd.args(["a2a", "--root"])
            .arg(root)
            .args(["--host", "127.0.0.1", "--port", "0"])
            .args(extra)
            .env_remove("DHP_A2A_TOKEN");
        if !own_token {
            cmd.env("DHP_A2A_TOKEN", TEST_TOKEN);
        }
        let mut child = cmd
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn dhp a2a");
        let mut first = String::new();
        BufReader::new(child.stdout.as_mut().expect("piped stdout")).read_line(&mut first).expect("read first line");
        let url = first
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("dhp a2a did not start: {first:?} (exit {:?})", child.try_wait()))
            .to_string();
        let port = url.trim_end_matches('/').rsplit(':').next().and_then(|p| p.parse().ok()).expect("port in url");
        Server { child, url, port }
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Run the SDK client; returns (exit code, JSON lines printed). It sends
/// [`TEST_TOKEN`] unless `args` give a `--token` (`--token ""`: none).
pub fn sdk(url: &str, args: &[&str]) -> (i32, Vec<Value>) {
    let script = dhp_testkit::checkout().join("dhp/tests/py/a2a_client.py");
    let mut cmd = Command::new(dhp_testkit::python());
    cmd.arg(&script).arg(url).args(args);
    if !args.contains(&"--token") {
        cmd.args(["--token", TEST_TOKEN]);
    }
    let out = cmd.output().expect("run a2a_client.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Value> = stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let code = out.status.code().unwrap_or(-1);
    if lines.is_empty() {
        panic!("a2a_client.py {args:?} printed nothing (exit {code}): {}", String::from_utf8_lossy(&out.stderr));
    }
    (code, lines)
}

/// The SDK client must succeed; its lines.
pub fn sdk_ok(url: &str, args: &[&str]) -> Vec<Value> {
    let (code, lines) = sdk(url, args);
    assert_eq!(code, 0, "a2a_client.py {args:?} failed: {lines:?}");
    lines
}

/// The SDK client must fail with this error class; its message.
pub fn sdk_err(url: &str, args: &[&str], class: &str) -> String {
    let (code, lines) = sdk(url, args);
    assert_eq!(code, 1, "a2a_client.py {args:?} should fail with {class}: {lines:?}");
    assert_eq!(lines[0]["error"], class, "{lines:?}");
    lines[0]["message"].as_str().unwrap_or("").to_string()
}

/// Submit a census task without waiting; returns (task id, handoff id).
pub fn submit(url: &str, task: &str) -> (String, String) {
    let lines = sdk_ok(url, &["send", task, "--immediate"]);
    let t = &lines[0]["task"];
    (t["id"].as_str().expect("task id").to_string(), t["metadata"]["dhp_handoff_id"].as_str().expect("hid").to_string())
}

/// One raw HTTP/1.1 request; returns (status, headers text, body).
/// `Host: 127.0.0.1` unless `headers` give one (an empty value: none).
pub fn http(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("Host")) {
        req.push_str("Host: 127.0.0.1\r\n");
    }
    for (k, v) in headers.iter().filter(|(_, v)| !v.is_empty()) {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    // The server may answer (and close) before reading an oversize body.
    let _ = s.write_all(body);
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("HTTP response head");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).expect("status code");
    (status, head, raw[split + 4..].to_vec())
}

/// POST a JSON-RPC body to `/` (`A2A-Version: 1.0`, `Content-Type:
/// application/json` and `Authorization: Bearer TEST_TOKEN` unless given;
/// a header given with an empty value is left out); (status, JSON).
pub fn rpc_raw(port: u16, body: &[u8], headers: &[(&str, &str)]) -> (u16, Value) {
    let given = |name: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    let bearer = format!("Bearer {TEST_TOKEN}");
    let mut h = Vec::new();
    for (name, default) in
        [("Content-Type", "application/json"), ("A2A-Version", "1.0"), ("Authorization", bearer.as_str())]
    {
        if !given(name) {
            h.push((name, default));
        }
    }
    h.extend(headers.iter().copied().filter(|(_, v)| !v.is_empty()));
    let (status, _, body) = http(port, "POST", "/", &h, body);
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

/// Poll `dhp status ROOT HID --json` until `pred` holds.
pub fn wait_status(root: &Path, hid: &str, what: &str, timeout: Duration, pred: impl Fn(&Value) -> bool) -> Value {
    let end = Instant::now() + timeout;
    loop {
        let out = Command::new(dhp_bin()).arg("status").arg(root).arg(hid).arg("--json").output().expect("dhp status");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        if pred(&v) {
            return v;
        }
        assert!(Instant::now() < end, "timed out waiting for {what}: last status {v}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A fresh store in `dir/root`.
pub fn new_store(dir: &Path) -> PathBuf {
    let root = dir.join("root");
    let out = Command::new(dhp_bin())
        .arg("dispatch")
        .arg(&root)
        .args(["--create", "--census", "0,10,5", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "create store: {}", String::from_utf8_lossy(&out.stderr));
    root
}
