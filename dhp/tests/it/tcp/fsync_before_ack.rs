//! Acked means durable: with a failpoint that pauses between writing a
//! line and syncing it, the line is already in the log while its ack has
//! not left; the ack arrives only after the pause (the sync). With
//! `--no-fsync` the ack does not wait (the reference's behaviour).
use crate::tcp_support::*;
use serde_json::json;
use std::io::BufRead;
use std::time::{Duration, Instant};

const PAUSE_MS: u64 = 1500;

fn run(extra: &[&str]) -> (Duration, usize) {
    let tmp = tempfile::tempdir().unwrap();
    let pause = PAUSE_MS.to_string();
    let env = [("DHP_TRANSPORT_TOKEN", TOKEN), ("DHP_TRANSPORT_FAILPOINT_PRE_FSYNC_MS", pause.as_str())];
    let srv = Server::start_with(&tmp.path().join("logs"), 0, &env, extra);
    let (env, hid) = envelope(1, 100);
    let mut c = Raw::connect(&srv.addr());
    assert_eq!(c.hello(&hid, TOKEN)["ok"], true);
    assert_eq!(c.rpc(&json!({"type": "envelope", "envelope": env})), json!({"ok": true}));
    c.send_json(&cp_frame(0, &json!({"s": 0})));
    let t0 = Instant::now();
    // Wait until the line is written, then check no ack is there yet.
    dhp_testkit::wait_until(Duration::from_secs(5), "line in log", || log_seqs(&srv.log(&hid)) == vec![0]);
    c.w.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let early = match c.r.fill_buf() {
        Ok(b) => b.len(),
        Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => 0,
        Err(e) => panic!("{e}"),
    };
    c.w.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert_eq!(c.recv(), Some(json!({"ok": true, "seq": 0})));
    (t0.elapsed(), early)
}

#[test]
fn no_ack_leaves_before_the_fsync() {
    let (waited, early) = run(&[]);
    assert_eq!(early, 0, "an ack was readable while the line was unsynced");
    assert!(waited >= Duration::from_millis(PAUSE_MS - 100), "ack after {waited:?}");

    let (waited, _) = run(&["--no-fsync"]);
    assert!(waited < Duration::from_millis(PAUSE_MS / 2), "--no-fsync ack after {waited:?}");
}
