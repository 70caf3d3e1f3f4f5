//! Helpers of the `dashboard_*` scenarios: a `dhp dashboard` process on
//! port 0, a plain HTTP/1.1 client (every header under the test's
//! control, Host and Origin included), a store filled by direct SQL, and a
//! headless Chromium driven over the DevTools protocol on a pipe
//! (`--remote-debugging-pipe`: no WebSocket library needed).
#![allow(dead_code)]

use crate::common::*;
use dhp_core::envelope::{self, BuildOptions};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub const TOKEN: &str = "dash-test-token-3f9c2a71";

/// A running `dhp dashboard`.
pub struct Dash {
    pub child: Option<Child>,
    pub port: u16,
    pub url: String,
    pub stderr: PathBuf,
    stdout_rest: Option<std::thread::JoinHandle<String>>,
    _dir: tempfile::TempDir,
}

impl Dash {
    /// Start `dhp dashboard ROOT --port 0 --poll 0.1 EXTRA` with the test
    /// token in `DHP_DASHBOARD_TOKEN`, and wait for its listening line.
    pub fn start(root: &Path, extra: &[&str]) -> Dash {
        Self::start_env(root, extra, &[("DHP_DASHBOARD_TOKEN", TOKEN)])
    }

    pub fn start_env(root: &Path, extra: &[&str], env: &[(&str, &str)]) -> Dash {
        Self::launch(&dhp_bin(), root, extra, env)
    }

    /// [`Dash::start`] of another `dhp` binary (measurements).
    pub fn start_bin(bin: &Path, root: &Path, extra: &[&str]) -> Dash {
        Self::launch(bin, root, extra, &[("DHP_DASHBOARD_TOKEN", TOKEN)])
    }

    fn launch(bin: &Path, root: &Path, extra: &[&str], env: &[(&str, &str)]) -> Dash {
        let dir = tempfile::tempdir().unwrap();
        let stderr = dir.path().join("dashboard.stderr");
        let mut child = Command::new(bin)
            .arg("dashboard")
            .arg(root)
            .args(["--port", "0"])
            .args(if extra.contains(&"--poll") { &[][..] } else { &["--poll", "0.1"][..] })
            .args(extra)
            .env_remove("DHP_DASHBOARD_TOKEN")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let Some(url) = line.split_whitespace().find(|w| w.starts_with("http://")) else {
            let _ = child.kill();
            panic!("no listening line: {line:?}; stderr: {}", std::fs::read_to_string(&stderr).unwrap_or_default());
        };
        let url = url.to_string();
        let port = url.trim_end_matches('/').rsplit(':').next().unwrap().parse().unwrap();
        let rest = std::thread::spawn(move || {
            let mut s = line;
            let _ = out.read_to_string(&mut s);
            s
        });
        Dash { child: Some(child), port, url, stderr, stdout_rest: Some(rest), _dir: dir }
    }

    /// GET `path` with the bearer token.
    pub fn get(&self, path: &str) -> Resp {
        self.request("GET", path, &[("Authorization", &format!("Bearer {TOKEN}"))], "")
    }

    /// GET `path` with the bearer token; the body as JSON (status 200).
    pub fn json(&self, path: &str) -> Value {
        let r = self.get(path);
        assert_eq!(r.status, 200, "GET {path}: {} {}", r.status, r.body);
        serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("GET {path}: {e}: {}", r.body))
    }

    pub fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Resp {
        http(self.port, method, path, headers, body)
    }

    /// SIGTERM, wait, and return (exit code, all of stdout, all of stderr).
    pub fn stop(mut self) -> (i32, String, String) {
        let mut child = self.child.take().unwrap();
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM)
            .unwrap();
        let code = child.wait().unwrap().code().unwrap_or(-1);
        let out = self.stdout_rest.take().unwrap().join().unwrap();
        (code, out, std::fs::read_to_string(&self.stderr).unwrap_or_default())
    }
}

impl Drop for Dash {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// An HTTP response.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    /// Lowercase names.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// One request on its own connection (`Connection: close`). `Host` is
/// `127.0.0.1:PORT` unless `headers` gives one.
pub fn http(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Resp {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    parse_response(&raw)
}

fn parse_response(raw: &[u8]) -> Resp {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split_whitespace().nth(1)).and_then(|c| c.parse().ok()).unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':').map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string())))
        .collect();
    let chunked = headers.iter().any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked { dechunk(body) } else { body.to_string() };
    Resp { status, headers, body }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else { break };
        if n == 0 || rest.len() < n {
            out.push_str(rest.get(..n.min(rest.len())).unwrap_or(""));
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// What `/api/events` sent until `needle` appeared (the stream does not
/// end; at most 10 s or 64 KiB).
pub fn events_until(port: u16, headers: &[(&str, &str)], needle: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut req = format!("GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while got.len() < 65536 && !String::from_utf8_lossy(&got).contains(needle) {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(k) => got.extend_from_slice(&buf[..k]),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// A census envelope numbered `i`, as `dhp dispatch --census` builds it.
pub fn envelope_for(i: u64) -> Value {
    let (lo, hi) = (1000 + i * 1000, 2000 + i * 1000);
    envelope::build(
        dhp_workload::census::KIND,
        dhp_workload::census::inputs(lo, hi, 100),
        dhp_workload::census::output_schema(),
        BuildOptions { created_by: Some("dashboard-test".into()), ..Default::default() },
    )
    .unwrap()
}

/// A new store under `root` with `n` handoffs written by direct SQL: of
/// every three, one running (holder `w-<i % 4>`, fence `i % 5`), one
/// pending, one failed (error `reason-<i>`). Returns every hid by status.
pub fn fill(root: &Path, n: u64) -> std::collections::BTreeMap<String, Vec<String>> {
    fill_with(root, n, |i| ["running", "pending", "failed"][(i % 3) as usize])
}

/// [`fill`] with the status of handoff `i` chosen by `status_of`.
pub fn fill_with(
    root: &Path,
    n: u64,
    status_of: impl Fn(u64) -> &'static str,
) -> std::collections::BTreeMap<String, Vec<String>> {
    drop(dhp_core::store::SqliteStore::open(root).unwrap());
    let mut c = rusqlite::Connection::open(root.join("dhp.sqlite3")).unwrap();
    let t = envelope::now();
    let mut by: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    let tx = c.transaction().unwrap();
    for i in 0..n {
        let mut env = envelope_for(i);
        let hid = env["handoff_id"].as_str().unwrap().to_string();
        let status = status_of(i);
        env["execution"]["status"] = json!(status);
        if status == "running" {
            let holder = format!("w-{}", i % 4);
            env["execution"]["runner_id"] = json!(holder);
            tx.execute(
                "INSERT INTO ownership (hid, holder, fence, lease_expires_at, heartbeat_interval_s, max_missed, \
                 updated_at) VALUES (?1, ?2, ?3, ?4, 10.0, 3, ?5)",
                rusqlite::params![hid, holder, (i % 5) as i64, t + 3600.0, t],
            )
            .unwrap();
        }
        if status == "failed" {
            env["execution"]["error"] = json!(format!("reason-{i}"));
        }
        tx.execute(
            "INSERT INTO handoffs (hid, envelope_json, updated_at) VALUES (?1, ?2, ?3)",
            rusqlite::params![hid, dhp_core::json::dumps(&env).unwrap(), t],
        )
        .unwrap();
        by.entry(status.to_string()).or_default().push(hid);
    }
    tx.commit().unwrap();
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
    for v in by.values_mut() {
        v.sort();
    }
    by
}

/// Wait until `f` returns `Some`, at most `secs`.
pub fn wait_some<T>(what: &str, secs: f64, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < end, "not {what} within {secs} s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The Chromium `scripts/deb.sh chromium` finds (scripts/services.sh installs it): its path.
pub fn chromium() -> PathBuf {
    let script = dhp_testkit::checkout().join("scripts/deb.sh");
    let out = Command::new("bash").arg(&script).arg("chromium").output().expect("run scripts/deb.sh");
    assert!(out.status.success(), "scripts/deb.sh chromium failed: {}", String::from_utf8_lossy(&out.stderr));
    let path = String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or("").trim().to_string();
    assert!(Path::new(&path).exists(), "scripts/deb.sh chromium printed {path:?}, which does not exist");
    PathBuf::from(path)
}

/// A headless Chromium with one page, driven over the DevTools protocol.
pub struct Browser {
    child: Child,
    input: ChildStdin,
    replies: mpsc::Receiver<Value>,
    next: u64,
    session: String,
    _profile: tempfile::TempDir,
}

impl Browser {
    pub fn start() -> Browser {
        let profile = tempfile::tempdir().unwrap();
        // The pipe transport reads commands on fd 3 and writes replies on
        // fd 4: the shell hands it our stdin and stdout there.
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(r#"exec "$0" "$@" 3<&0 4>&1 0</dev/null 1>/dev/null"#)
            .arg(chromium())
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--remote-debugging-pipe",
                "--window-size=1400,900",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromium");
        let input = child.stdin.take().unwrap();
        let mut out = child.stdout.take().unwrap();
        let (tx, replies) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 65536];
            loop {
                let n = match out.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                buf.extend_from_slice(&chunk[..n]);
                while let Some(p) = buf.iter().position(|b| *b == 0) {
                    let msg: Vec<u8> = buf.drain(..=p).collect();
                    if let Ok(v) = serde_json::from_slice::<Value>(&msg[..msg.len() - 1]) {
                        if v.get("id").is_some() && tx.send(v).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let mut b = Browser { child, input, replies, next: 0, session: String::new(), _profile: profile };
        let target = b.call("Target.createTarget", json!({"url": "about:blank"}));
        let target = target["targetId"].as_str().expect("a target id").to_string();
        let s = b.call("Target.attachToTarget", json!({"targetId": target, "flatten": true}));
        b.session = s["sessionId"].as_str().expect("a session id").to_string();
        b.call("Page.enable", json!({}));
        b.call("Runtime.enable", json!({}));
        b
    }

    /// Send a command (to the page's session once attached); its result.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            msg["sessionId"] = json!(self.session);
        }
        let mut bytes = msg.to_string().into_bytes();
        bytes.push(0);
        self.input.write_all(&bytes).unwrap();
        self.input.flush().unwrap();
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let v = self.replies.recv_timeout(left).unwrap_or_else(|e| panic!("no reply to {method}: {e}"));
            if v["id"] == id {
                if let Some(err) = v.get("error") {
                    panic!("{method}: {err}");
                }
                return v["result"].clone();
            }
        }
    }

    /// Evaluate `expr` in the page (promises awaited); its JSON value.
    pub fn eval(&mut self, expr: &str) -> Value {
        let r = self.call("Runtime.evaluate", json!({"expression": expr, "returnByValue": true, "awaitPromise": true}));
        if let Some(ex) = r.get("exceptionDetails") {
            panic!("{expr}: {ex}");
        }
        r["result"]["value"].clone()
    }

    /// [`Browser::eval`], null while the expression throws (the page is
    /// still loading): for waits.
    pub fn peek(&mut self, expr: &str) -> Value {
        self.eval(&format!("(() => {{ try {{ return ({expr}); }} catch (e) {{ return null; }} }})()"))
    }

    pub fn navigate(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url}));
    }

    /// Save a PNG of the page to `path`.
    pub fn screenshot(&mut self, path: &Path) {
        let r = self.call("Page.captureScreenshot", json!({"format": "png"}));
        let png = base64_decode(r["data"].as_str().expect("screenshot data"));
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        std::fs::write(path, png).unwrap();
        println!("screenshot: {}", path.display());
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes().filter_map(val) {
        acc = (acc << 6) | c;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

/// Where a test leaves its screenshots: kept after the run.
pub fn output_dir(test: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard").join(test);
    std::fs::create_dir_all(&d).unwrap();
    d
}
