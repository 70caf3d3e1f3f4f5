//! Entry points for the coverage-guided fuzz targets in `fuzz/`
//! (`docs/fuzzing.md`): one function per parser that takes outside bytes.
//!
//! Each takes arbitrary bytes and drives the real code path (an in-memory
//! store, a real TCP server on loopback). A typed error is a fine outcome;
//! a panic is a bug. Beyond "no panic", each checks what must hold for any
//! input (an ingest that failed left the store unchanged, a second ingest
//! adds nothing, an accepted envelope verifies, ...) with `assert!`, so the
//! fuzzer reports a broken invariant as a crash. The same functions replay
//! the committed corpus in `dhp-core/tests/it/fuzz_corpus_replay.rs`, on the
//! stable toolchain.

use dhp_core::config::Config;
use dhp_core::runner::Runner;
use dhp_core::store::{Backend, MemStore};
use dhp_core::transport::log;
use dhp_core::{envelope, json};
use serde_json::Value;
use std::sync::Arc;

/// A runner on a fresh in-memory store.
fn mem_runner(cfg: Config) -> Option<Runner> {
    let store: Arc<dyn Backend> = Arc::new(MemStore::new());
    Runner::new(store, "fuzz", cfg).ok()
}

/// A small config, so that limits are reachable by short inputs.
fn small_cfg() -> Config {
    Config {
        transport_max_line_bytes: 4096,
        max_checkpoint_bytes: 2048,
        max_envelope_bytes: 8192,
        max_result_bytes: 2048,
        ..Config::default()
    }
}

/// Everything a runner's store holds about `hid`, as text.
fn snapshot(r: &Runner, hid: &str) -> String {
    let env = r.envelope_bare(hid).map(|v| v.to_string()).unwrap_or_default();
    let rows = r.checkpoints(hid).map(|v| format!("{v:?}")).unwrap_or_default();
    format!("{env}\n{rows}")
}

/// (seq, state_hash) of every checkpoint row.
fn snapshot_rows(r: &Runner, hid: &str) -> Vec<(i64, String)> {
    r.checkpoints(hid).map(|v| v.into_iter().map(|c| (c.seq, c.state_hash)).collect()).unwrap_or_default()
}

/// Transport log bytes: split and parsed ([`log::parse_lines`]), then
/// ingested. A failed ingest leaves the store unchanged; a successful one
/// is idempotent.
pub fn transport_log(data: &[u8]) {
    let cfg = small_cfg();
    let lines = log::parse_lines(data, &cfg);
    let Some(r) = mem_runner(cfg.clone()) else { return };
    match log::ingest_lines(r.store().as_ref(), &lines, &cfg) {
        Ok(rep) => {
            assert!(envelope::check_hid(&rep.handoff_id).is_ok());
            let before = snapshot(&r, &rep.handoff_id);
            let again = log::ingest_lines(r.store().as_ref(), &lines, &cfg);
            let again = again.unwrap_or_else(|e| panic!("re-ingest of an accepted log failed: {e}"));
            assert_eq!(again.checkpoints_new, 0, "re-ingest added rows");
            assert_eq!(snapshot(&r, &rep.handoff_id), before, "re-ingest changed the store");
        }
        Err(_) => assert!(r.all_hids().map(|h| h.is_empty()).unwrap_or(false), "failed ingest left a handoff behind"),
    }
}

/// A suspend bundle: a failed resume leaves the store empty; a resumed
/// handoff verifies, can be claimed, suspended again, and that bundle
/// resumes elsewhere as the same handoff with the same checkpoints.
pub fn bundle(data: &[u8]) {
    let Some(r) = mem_runner(small_cfg()) else { return };
    match r.resume(data) {
        Ok(hid) => {
            let env = r.envelope(&hid).unwrap_or_else(|e| panic!("resumed handoff unreadable: {e}"));
            assert!(envelope::verify_id(&env), "resumed envelope does not verify");
            let rows = snapshot_rows(&r, &hid);
            if r.claim(&hid).is_err() {
                return; // e.g. its budget is already spent
            }
            let again = r.suspend(&hid).unwrap_or_else(|e| panic!("resumed handoff cannot be suspended: {e}"));
            let Some(r2) = mem_runner(small_cfg()) else { return };
            let hid2 = r2.resume(&again).unwrap_or_else(|e| panic!("our own bundle does not resume: {e}"));
            assert_eq!(hid2, hid);
            assert_eq!(snapshot_rows(&r2, &hid), rows, "checkpoints changed across suspend/resume");
        }
        Err(_) => assert!(r.all_hids().map(|h| h.is_empty()).unwrap_or(false), "failed resume left a handoff behind"),
    }
}

/// Envelope JSON text as `dispatch` receives it: parsed, verified, then
/// dispatched into a fresh store; an accepted envelope reads back with the
/// same id and dispatching it again is idempotent.
pub fn envelope_dispatch(data: &[u8]) {
    let Ok(env) = json::parse_bytes(data) else { return };
    let verified = envelope::verify(&env);
    let _ = json::canonical(&env);
    let Some(r) = mem_runner(small_cfg()) else { return };
    match r.dispatch(&env) {
        Ok(hid) => {
            assert!(envelope::check_hid(&hid).is_ok());
            if let Ok(v) = verified {
                assert_eq!(v, hid, "dispatch stored another id than verify computed");
            }
            let back = r.envelope(&hid).unwrap_or_else(|e| panic!("dispatched envelope unreadable: {e}"));
            assert!(envelope::verify_id(&back), "stored envelope does not verify");
            let again = r.dispatch(&env).unwrap_or_else(|e| panic!("second dispatch failed: {e}"));
            assert_eq!(again, hid);
        }
        Err(_) => assert!(r.all_hids().map(|h| h.is_empty()).unwrap_or(false), "failed dispatch left a handoff behind"),
    }
}

/// `DHP_*` settings: the input is `KEY=VALUE` lines; the config either
/// validates or is a typed error.
pub fn env_config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let vars: Vec<(String, String)> =
        text.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let lookup = |k: &str| vars.iter().rev().find(|(key, _)| key == k).map(|(_, v)| v.clone());
    if let Ok(cfg) = Config::from_lookup(lookup) {
        assert!(cfg.validate().is_ok(), "from_lookup returned a config that does not validate");
        // What the consumers rely on: every time knob, and the lease TTL
        // and heartbeat interval made from them, are durations.
        for (name, s) in [
            ("lease interval", cfg.lease_interval_s),
            ("heartbeat interval", cfg.lease_interval_s / 2.0),
            ("lease ttl", cfg.lease_ttl_s()),
            ("scan interval", cfg.supervisor_scan_s),
            ("leader ttl", cfg.leader_ttl_s),
            ("stall timeout", cfg.stall_timeout_s),
        ] {
            assert!(std::time::Duration::try_from_secs_f64(s).is_ok(), "{name} {s} is not a duration");
        }
    }
}

/// JSON text through both of the reference's writers: canonical bytes
/// parse back to an equivalent value whose canonical bytes are the same;
/// an object's state text hashes to the state hash.
pub fn json_text(data: &[u8]) {
    let Ok(v) = json::parse_bytes(data) else { return };
    if let Ok(c) = json::canonical(&v) {
        let back = json::parse_bytes(&c).unwrap_or_else(|e| panic!("canonical bytes do not parse: {e}"));
        assert_eq!(json::canonical(&back).ok().as_deref(), Some(&c[..]), "canonical form is not a fixed point");
    }
    if v.is_object() {
        if let Ok((text, hash)) = json::state_text_and_hash(&v) {
            assert_eq!(json::sha256_hex(text.as_bytes()), hash);
            assert!(text.is_ascii(), "state text must be ASCII (ensure_ascii)");
        }
    }
}

/// Client bytes to a real transport server (loopback, started once per
/// process): whatever the bytes, the server answers with JSON replies,
/// stays up, and every log it writes ingests (nothing it accepted is
/// tampered).
pub fn tcp_frames(data: &[u8]) {
    tcp::frames(data)
}

mod tcp {
    use super::*;
    use dhp_core::transport::net::{self, ServerConfig};
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpStream};
    use std::path::PathBuf;
    use std::sync::OnceLock;
    use std::time::Duration;

    struct Harness {
        addr: std::net::SocketAddr,
        logdir: PathBuf,
        _rt: tokio::runtime::Runtime,
    }

    fn harness() -> Option<&'static Harness> {
        static H: OnceLock<Option<Harness>> = OnceLock::new();
        H.get_or_init(|| {
            let logdir = std::env::temp_dir().join(format!("dhp-fuzz-tcp-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&logdir);
            let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().ok()?;
            let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).ok()?;
            let addr = listener.local_addr().ok()?;
            let sc = ServerConfig {
                logdir: logdir.clone(),
                token: String::new(),
                cfg: small_cfg(),
                idle_timeout: Duration::from_secs(2),
                fsync: false,
                tls: None,
            };
            rt.spawn(async move {
                let _ = net::run(listener, sc, std::future::pending::<()>()).await;
            });
            Some(Harness { addr, logdir, _rt: rt })
        })
        .as_ref()
    }

    pub(super) fn frames(data: &[u8]) {
        let Some(h) = harness() else { panic!("cannot start the fuzz transport server") };
        let mut s = TcpStream::connect(h.addr).unwrap_or_else(|e| panic!("server down: {e}"));
        let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
        let _ = s.write_all(data);
        let _ = s.shutdown(Shutdown::Write);
        let mut replies = Vec::new();
        let _ = s.read_to_end(&mut replies);
        for line in replies.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let v: Value = json::parse_bytes(line).unwrap_or_else(|e| panic!("server sent a non-JSON reply: {e}"));
            assert!(v.get("ok").is_some_and(Value::is_boolean), "reply without ok: {v}");
        }
        // The hello named at most one handoff: its log must ingest.
        let Ok(rd) = std::fs::read_dir(&h.logdir) else { return };
        let cfg = small_cfg();
        for entry in rd.flatten() {
            let p = entry.path();
            let Some(r) = mem_runner(cfg.clone()) else { return };
            match log::ingest(r.store().as_ref(), &p, &cfg) {
                Ok(_) => {}
                Err(dhp_core::Error::Transport { kind: dhp_core::TransportKind::Log, .. }) => {} // no header yet
                Err(e) => panic!("server wrote a log that does not ingest: {}: {e}", p.display()),
            }
            // Keep the directory small: every run starts from no logs.
            let _ = std::fs::remove_file(&p);
        }
    }
}
