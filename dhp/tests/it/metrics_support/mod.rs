//! Helpers of the metrics_* and trace_* scenarios: plain HTTP/1.0 over a
//! socket, a real Prometheus server, `--metrics` addresses read from
//! stderr, and processes killed on drop.
#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::{Duration, Instant};

/// A child process killed (SIGKILL) and reaped on drop.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// SIGTERM, then wait for the exit status.
pub fn term(p: &mut Proc) -> std::process::ExitStatus {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(p.0.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    p.0.wait().unwrap()
}

/// `GET path` over HTTP/1.0 (no chunking); returns status and body.
pub fn http_get(addr: &str, path: &str) -> std::io::Result<(u16, String)> {
    http(addr, "GET", path, &[], b"")
}

/// One HTTP/1.0 request; returns status and body.
pub fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut req = format!("{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes())?;
    s.write_all(body)?;
    let mut out = Vec::new();
    s.read_to_end(&mut out)?;
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    Ok((status, body.to_string()))
}

/// Percent-encode a query value.
pub fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Read the `dhp WHAT: metrics on http://ADDR/metrics` line from a child's
/// stderr (the rest of stderr is drained into a thread, so the child never
/// blocks on a full pipe); returns ADDR.
pub fn metrics_addr(stderr: ChildStderr) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if !sent {
                if let Some(rest) = line.split_once("metrics on http://").map(|(_, r)| r.to_string()) {
                    let _ = tx.send(rest.trim_end_matches("/metrics").to_string());
                    sent = true;
                    continue;
                }
            }
            eprintln!("child: {line}");
        }
    });
    rx.recv_timeout(Duration::from_secs(60)).expect("the process printed its --metrics address")
}

/// The repository's `scripts/deb.sh TOOL`: the path of a Debian tool
/// scripts/services.sh installed, or a loud failure.
pub fn deb_tool(tool: &str) -> PathBuf {
    let script = dhp_testkit::checkout().join("scripts/deb.sh");
    let out = Command::new("bash").arg(script).arg(tool).output().expect("run scripts/deb.sh");
    assert!(out.status.success(), "scripts/deb.sh {tool}: {}", String::from_utf8_lossy(&out.stderr));
    let path = String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or_default().trim().to_string();
    assert!(Path::new(&path).is_file(), "scripts/deb.sh {tool} printed {path:?}");
    PathBuf::from(path)
}

/// A real Prometheus server scraping `targets` (job name, host:port)
/// every second, its data in `dir`.
pub struct Prometheus {
    pub proc: Proc,
    pub addr: String,
}

impl Prometheus {
    pub fn start(dir: &Path, targets: &[(&str, &str)]) -> Prometheus {
        let bin = deb_tool("prometheus");
        let mut cfg = String::from("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n");
        for (job, t) in targets {
            cfg.push_str(&format!("  - job_name: {job}\n    static_configs:\n      - targets: ['{t}']\n"));
        }
        let conf = dir.join("prometheus.yml");
        std::fs::write(&conf, cfg).unwrap();
        let addr = format!("127.0.0.1:{}", free_port());
        let child = Command::new(bin)
            .arg(format!("--config.file={}", conf.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("tsdb").display()))
            .arg(format!("--web.listen-address={addr}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
            .spawn()
            .expect("start prometheus");
        let mut p = Prometheus { proc: Proc(child), addr };
        let end = Instant::now() + Duration::from_secs(60);
        loop {
            if matches!(http_get(&p.addr, "/-/ready"), Ok((200, _))) {
                return p;
            }
            if let Ok(Some(st)) = p.proc.0.try_wait() {
                panic!("prometheus exited ({st}): {}", std::fs::read_to_string(dir.join("prometheus.log")).unwrap());
            }
            assert!(Instant::now() < end, "prometheus not ready in 60 s");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// An instant query's result vector.
    pub fn query(&self, q: &str) -> Vec<Value> {
        let (code, body) = http_get(&self.addr, &format!("/api/v1/query?query={}", enc(q))).unwrap();
        let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        assert!(code == 200 && v["status"] == "success", "query {q}: {code} {body}");
        v["data"]["result"].as_array().cloned().unwrap_or_default()
    }

    /// The one value of an instant query that must return one series.
    pub fn value(&self, q: &str) -> f64 {
        let r = self.query(q);
        assert_eq!(r.len(), 1, "{q}: want one series, got {r:?}");
        r[0]["value"][1].as_str().and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("{q}: {r:?}"))
    }

    /// Wait until Prometheus holds a sample of `series` scraped after
    /// `after` (unix seconds).
    pub fn wait_scraped_after(&self, series: &str, after: f64, secs: f64) {
        let end = Instant::now() + Duration::from_secs_f64(secs);
        loop {
            let r = self.query(&format!("timestamp({series})"));
            let ts: Vec<f64> = r.iter().filter_map(|s| s["value"][1].as_str()?.parse().ok()).collect();
            if !ts.is_empty() && ts.iter().all(|t| *t > after) {
                return;
            }
            assert!(Instant::now() < end, "no scrape of {series} after {after} within {secs} s: {r:?}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// Now, as unix seconds.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64()
}
