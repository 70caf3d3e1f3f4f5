//! Helpers shared by the `tcp_*` integration tests: real `dhp` processes,
//! servers on 127.0.0.1 port 0, logs read back line by line.
#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub mod pki;

pub const TOKEN: &str = "tcp-test-token";

pub fn dhp_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_dhp"))
}

/// A `dhp transport` process.
pub struct Server {
    pub child: Child,
    pub port: u16,
    pub logdir: PathBuf,
    env: Vec<(String, String)>,
    extra: Vec<String>,
    /// Where its stderr goes (appended), when captured.
    pub stderr: Option<PathBuf>,
}

impl Server {
    /// Start on port 0 with the test token.
    pub fn start(logdir: &Path) -> Server {
        Server::start_with(logdir, 0, &[("DHP_TRANSPORT_TOKEN", TOKEN)], &[])
    }

    pub fn start_with(logdir: &Path, port: u16, env: &[(&str, &str)], extra: &[&str]) -> Server {
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        Server::spawn(logdir.to_path_buf(), port, env, extra, None)
    }

    /// Like [`Server::start_with`] (test token, port 0), with stderr
    /// appended to `stderr` so a test can read the server's warnings.
    pub fn start_capturing(logdir: &Path, extra: &[&str], stderr: &Path) -> Server {
        let env = vec![("DHP_TRANSPORT_TOKEN".to_string(), TOKEN.to_string())];
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        Server::spawn(logdir.to_path_buf(), 0, env, extra, Some(stderr.to_path_buf()))
    }

    /// What the server wrote to its captured stderr so far.
    pub fn stderr_text(&self) -> String {
        self.stderr.as_ref().map(|p| std::fs::read_to_string(p).unwrap_or_default()).unwrap_or_default()
    }

    fn spawn(
        logdir: PathBuf,
        port: u16,
        env: Vec<(String, String)>,
        extra: Vec<String>,
        stderr: Option<PathBuf>,
    ) -> Server {
        // Restarting on a fixed port can race the old socket's teardown.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let mut child = Command::new(dhp_bin())
                .arg("transport")
                .arg(&logdir)
                .args(["--host", "127.0.0.1", "--port", &port.to_string()])
                .args(&extra)
                .env_remove("DHP_TRANSPORT_TOKEN")
                .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .stdout(Stdio::piped())
                .stderr(match &stderr {
                    Some(p) => Stdio::from(std::fs::OpenOptions::new().create(true).append(true).open(p).unwrap()),
                    None => Stdio::inherit(),
                })
                .spawn()
                .expect("spawn dhp transport");
            let mut first = String::new();
            BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut first).unwrap();
            if first.is_empty() {
                let st = child.wait().unwrap();
                assert!(Instant::now() < deadline, "dhp transport did not start: {st}");
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
            assert!(first.starts_with("dhp transport: listening on 127.0.0.1:"), "{first}");
            assert!(first.contains(", logs -> "), "{first}");
            let port: u16 = first
                .trim_start_matches("dhp transport: listening on 127.0.0.1:")
                .split(',')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            assert_ne!(port, 0);
            return Server { child, port, logdir, env, extra, stderr };
        }
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// SIGKILL: no graceful anything.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM and the exit code.
    pub fn term(&mut self) -> i32 {
        signal(self.child.id(), nix::sys::signal::Signal::SIGTERM);
        let st = wait_timeout(&mut self.child, Duration::from_secs(10)).expect("dhp transport did not exit on SIGTERM");
        st.code().unwrap_or(-1)
    }

    /// A new process on the same port and log dir.
    pub fn restart(&mut self) {
        self.kill9();
        let s =
            Server::spawn(self.logdir.clone(), self.port, self.env.clone(), self.extra.clone(), self.stderr.clone());
        let old = std::mem::replace(self, s);
        drop(old);
    }

    pub fn log(&self, hid: &str) -> PathBuf {
        self.logdir.join(format!("{hid}.log"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn signal(pid: u32, sig: nix::sys::signal::Signal) {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), sig);
}

pub fn wait_timeout(child: &mut Child, d: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + d;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return Some(st);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `dhp ARGS --json`: (exit code, last stdout line as JSON, stderr).
pub fn dhp(args: &[&str], env: &[(&str, &str)]) -> (i32, Value, String) {
    let out = Command::new(dhp_bin()).args(args).arg("--json").envs(env.iter().copied()).output().expect("run dhp");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v = stdout.lines().last().and_then(|l| serde_json::from_str(l).ok()).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), v, String::from_utf8_lossy(&out.stderr).into_owned())
}

pub fn dhp_ok(args: &[&str], env: &[(&str, &str)]) -> Value {
    let (code, v, err) = dhp(args, env);
    assert!(code == 0, "dhp {args:?} exited {code}: {v} {err}");
    v
}

/// A census handoff in `root`; returns its hid.
pub fn census(root: &Path, lo: u64, hi: u64, chunk: u64) -> String {
    let v = dhp_ok(&["dispatch", "--create", root.to_str().unwrap(), "--census", &format!("{lo},{hi},{chunk}")], &[]);
    v["hid"].as_str().unwrap().to_string()
}

/// `dhp work ROOT --runner R claim HID ARGS...` as a child process.
pub fn spawn_work(root: &Path, runner: &str, hid: &str, args: &[&str], env: &[(&str, &str)]) -> Child {
    Command::new(dhp_bin())
        .args(["work", root.to_str().unwrap(), "--runner", runner, "claim", hid, "--json"])
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn dhp work")
}

/// Wait for a child and return (code, stdout JSON, stderr).
pub fn finish(mut child: Child, d: Duration) -> (i32, Value, String) {
    let st = match wait_timeout(&mut child, d) {
        Some(st) => st,
        None => {
            let _ = child.kill();
            let _ = child.wait();
            let mut err = String::new();
            let _ = child.stderr.take().unwrap().read_to_string(&mut err);
            panic!("child did not finish within {d:?}: {err}");
        }
    };
    let mut out = String::new();
    let mut err = String::new();
    let _ = child.stdout.take().unwrap().read_to_string(&mut out);
    let _ = child.stderr.take().unwrap().read_to_string(&mut err);
    let v = out.lines().last().and_then(|l| serde_json::from_str(l).ok()).unwrap_or(Value::Null);
    (st.code().unwrap_or(-1), v, err)
}

/// Records of a log file (bad lines skipped), as JSON values.
pub fn records(path: &Path) -> Vec<Value> {
    let data = std::fs::read(path).unwrap_or_default();
    data.split(|b| *b == b'\n').filter_map(|l| serde_json::from_slice::<Value>(l).ok()).collect()
}

/// Checkpoint seqs in a log, in file order.
pub fn log_seqs(path: &Path) -> Vec<i64> {
    records(path).iter().filter(|v| v["type"] == "checkpoint").filter_map(|v| v["seq"].as_i64()).collect()
}

/// Number of lines (including torn ones) in a file.
pub fn line_count(path: &Path) -> usize {
    std::fs::read(path).map(|d| d.split(|b| *b == b'\n').filter(|l| !l.is_empty()).count()).unwrap_or(0)
}

/// (seq, state_hash) rows of a root's store, through the library.
pub fn store_rows(root: &Path, hid: &str) -> Vec<(i64, String)> {
    let r = dhp_core::Runner::open(root, "tcp-test-reader", dhp_core::Config::default()).unwrap();
    r.checkpoints(hid).unwrap().into_iter().map(|c| (c.seq, c.state_hash)).collect()
}

/// `dhp ingest ROOT LOG` into a fresh root; returns the report.
pub fn ingest_ours(root: &Path, log: &Path) -> Value {
    let v = dhp_ok(&["ingest", "--create", root.to_str().unwrap(), log.to_str().unwrap()], &[]);
    v["reports"][0].clone()
}

/// Assert that `log` is exactly the checkpoints of `src` (no loss, no
/// duplicate line), ingests cleanly into a fresh root, and that the fresh
/// root then holds the same rows.
pub fn assert_log_matches_store(log: &Path, src_root: &Path, hid: &str, fresh_root: &Path) {
    let want = store_rows(src_root, hid);
    let mut seqs = log_seqs(log);
    let n = seqs.len();
    seqs.sort();
    seqs.dedup();
    assert_eq!(seqs.len(), n, "duplicate checkpoint lines in {}", log.display());
    assert_eq!(seqs, want.iter().map(|r| r.0).collect::<Vec<_>>(), "log and store disagree");
    let rep = ingest_ours(fresh_root, log);
    assert_eq!(rep["handoff_id"], hid);
    assert_eq!(rep["checkpoints_ingested"], want.len());
    assert_eq!(rep["checkpoints_new"], want.len());
    assert_eq!(rep["lines_skipped"], 0);
    assert_eq!(rep["gaps"], serde_json::json!([]));
    assert_eq!(store_rows(fresh_root, hid), want);
}

/// A raw protocol client.
pub struct Raw {
    pub w: TcpStream,
    pub r: BufReader<TcpStream>,
}

impl Raw {
    pub fn connect(addr: &str) -> Raw {
        let w = TcpStream::connect(addr).unwrap();
        w.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let r = BufReader::new(w.try_clone().unwrap());
        Raw { w, r }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.w.write_all(bytes).unwrap();
    }

    pub fn send_json(&mut self, v: &Value) {
        let line = dhp_core::json::dumps_sorted(v).unwrap() + "\n";
        self.send(line.as_bytes());
    }

    /// Next reply line, or None on EOF.
    pub fn recv(&mut self) -> Option<Value> {
        let mut line = String::new();
        match self.r.read_line(&mut line) {
            Ok(0) => None,
            Ok(_) => Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad reply {line:?}: {e}"))),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => None,
            Err(e) => panic!("recv: {e}"),
        }
    }

    /// Raw reply text (to check the exact bytes).
    pub fn recv_text(&mut self) -> String {
        let mut line = String::new();
        self.r.read_line(&mut line).unwrap();
        line
    }

    pub fn rpc(&mut self, v: &Value) -> Value {
        self.send_json(v);
        self.recv().expect("server closed the connection")
    }

    pub fn hello(&mut self, hid: &str, token: &str) -> Value {
        self.rpc(&serde_json::json!({"type": "hello", "handoff_id": hid, "token": token}))
    }
}

/// A fresh census envelope (not dispatched anywhere) and its hid.
pub fn envelope(lo: u64, hi: u64) -> (Value, String) {
    use dhp_core::envelope;
    use dhp_workload::census;
    let env =
        envelope::build(census::KIND, census::inputs(lo, hi, 10), census::output_schema(), Default::default()).unwrap();
    let hid = env["handoff_id"].as_str().unwrap().to_string();
    (env, hid)
}

/// Ship `env` and checkpoints `0..n` (state `state(seq)`) through a
/// synchronous shipper with the test token: every call returns on its ack.
pub fn ship_sync(addr: &str, env: &Value, hid: &str, n: i64, state: impl Fn(i64) -> Value) {
    use dhp_core::transport::net::{ShipMode, ShipperOptions, TcpShipper};
    use dhp_core::transport::Shipper;
    let opts = ShipperOptions {
        token: TOKEN.into(),
        mode: ShipMode::Sync,
        call_timeout: Duration::from_secs(20),
        ..Default::default()
    };
    let mut sh = TcpShipper::new(addr, opts).unwrap();
    sh.ship_envelope(hid, env).unwrap();
    for seq in 0..n {
        sh.ship_checkpoint(hid, seq, &cp_line(seq, &state(seq))).unwrap();
    }
    sh.close().unwrap();
}

/// A checkpoint frame/line for `state` at `seq`.
pub fn cp_line(seq: i64, state: &Value) -> String {
    let (_, hash) = dhp_core::json::state_text_and_hash(state).unwrap();
    dhp_core::transport::log::checkpoint_line(seq, state, &hash, &dhp_core::envelope::utcnow_iso()).unwrap()
}

pub fn cp_frame(seq: i64, state: &Value) -> Value {
    serde_json::from_str(&cp_line(seq, state)).unwrap()
}

/// The reference interpreter (creating the venv if needed).
pub fn python() -> PathBuf {
    if std::env::var_os("DHP_PYTHON").is_none() && !dhp_testkit::checkout().join(".venv/bin/python").exists() {
        let st = Command::new("bash").arg(dhp_testkit::checkout().join("scripts/setup.sh")).status().unwrap();
        assert!(st.success(), "scripts/setup.sh failed");
    }
    dhp_testkit::python()
}

pub fn refctl_path() -> PathBuf {
    dhp_testkit::checkout().join("scripts/pyref/refctl.py")
}

/// `refctl ARGS`: (exit code, JSON reply).
pub fn refctl(args: &[&str], env: &[(&str, &str)]) -> (i32, Value) {
    let out =
        Command::new(python()).arg(refctl_path()).args(args).envs(env.iter().copied()).output().expect("run refctl");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v = stdout.lines().last().and_then(|l| serde_json::from_str(l).ok()).unwrap_or(Value::Null);
    assert!(!v.is_null(), "refctl {args:?} printed no JSON: {}", String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), v)
}

pub fn refctl_ok(args: &[&str], env: &[(&str, &str)]) -> Value {
    let (code, v) = refctl(args, env);
    assert!(code == 0 && v["ok"] == true, "refctl {args:?} failed: {v}");
    v
}

/// Path of a helper script under tests/py/.
pub fn py_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py").join(name)
}

pub fn tok() -> [(&'static str, &'static str); 1] {
    [("DHP_TRANSPORT_TOKEN", TOKEN)]
}
