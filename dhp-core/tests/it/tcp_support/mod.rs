//! Helpers shared by the `tcp_*` integration tests of the library: servers
//! on 127.0.0.1 port 0, logs read back line by line (the `dhp` program's
//! tests have their own copy, with its processes).
#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

pub const TOKEN: &str = "tcp-test-token";

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

/// A transport server in this process on 127.0.0.1 port 0, with the test
/// token, a 60 s idle timeout and its logs in a temporary directory.
pub struct InProcess {
    pub addr: String,
    /// Its live counters.
    pub counters: dhp_core::transport::net::StatsHandle,
    pub tmp: tempfile::TempDir,
    rt: tokio::runtime::Runtime,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<dhp_core::Result<dhp_core::transport::net::ServerStats>>,
}

impl InProcess {
    pub fn start(fsync: bool) -> InProcess {
        use dhp_core::transport::net::{self, ServerConfig};
        let tmp = tempfile::tempdir().unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let cfg = ServerConfig {
            logdir: tmp.path().join("logs"),
            token: TOKEN.into(),
            cfg: dhp_core::Config::default(),
            idle_timeout: Duration::from_secs(60),
            fsync,
            tls: None,
        };
        let prepared = net::prepare(cfg).unwrap();
        let counters = prepared.stats_handle();
        let server = rt.spawn(prepared.serve(listener, async move {
            let _ = stop_rx.await;
        }));
        InProcess { addr, counters, tmp, rt, stop, server }
    }

    /// Stop it and return its counters.
    pub fn stop(self) -> dhp_core::transport::net::ServerStats {
        let _ = self.stop.send(());
        self.rt.block_on(self.server).unwrap().unwrap()
    }
}
