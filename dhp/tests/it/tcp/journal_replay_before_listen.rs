//! The server announces itself (and accepts) only after the journal an
//! unclean stop left has been replayed: a client that connects as soon as
//! it reads "listening" is answered with the replayed `ack_seq`, never with
//! the state of a log the replay has not restored yet. The
//! `transport.recover` failpoint SIGSTOPs the server inside the replay, so
//! the test can look at what it has announced at that moment.
use crate::tcp_support::*;
use serde_json::json;
use std::process::{Command, Stdio};
use std::time::Duration;

const N: i64 = 12;

/// The process state letter from /proc (`T`: stopped).
fn state(pid: u32) -> char {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit(')').next().and_then(|r| r.trim_start().chars().next()).unwrap_or('?')
}

#[test]
fn listening_is_announced_after_the_replay() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    let mut srv = Server::start_capturing(&logs, &[], &tmp.path().join("first.err"));
    let (env, hid) = envelope(77, 1000);
    ship_sync(&srv.addr(), &env, &hid, N, |seq| json!({"n": seq}));
    srv.kill9();
    // A power loss took the never-synced log: only the journal has it.
    std::fs::remove_file(srv.log(&hid)).unwrap();

    // stdout to a file, so what was announced can be read while stopped.
    let out_path = tmp.path().join("second.out");
    let mut child = Command::new(dhp_bin())
        .arg("transport")
        .arg(&logs)
        .args(["--host", "127.0.0.1", "--port", "0"])
        .env("DHP_TRANSPORT_TOKEN", TOKEN)
        .env("DHP_FAILPOINTS", "transport.recover=stop@1")
        .stdout(Stdio::from(std::fs::File::create(&out_path).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(tmp.path().join("second.err")).unwrap()))
        .spawn()
        .unwrap();
    let pid = child.id();
    dhp_testkit::wait_until(Duration::from_secs(20), "the server stopped inside the replay", || state(pid) == 'T');
    let announced = std::fs::read_to_string(&out_path).unwrap();
    assert_eq!(announced, "", "nothing is announced before the replay has run");

    signal(pid, nix::sys::signal::Signal::SIGCONT);
    let mut line = String::new();
    dhp_testkit::wait_until(Duration::from_secs(20), "the listening line", || {
        line = std::fs::read_to_string(&out_path).unwrap();
        line.ends_with('\n')
    });
    let port = line
        .trim_start_matches("dhp transport: listening on 127.0.0.1:")
        .split(',')
        .next()
        .and_then(|p| p.parse::<u16>().ok())
        .unwrap_or_else(|| panic!("not a listening line: {line:?}"));
    // Connect at once: the hello sees every replayed seq.
    let mut raw = Raw::connect(&format!("127.0.0.1:{port}"));
    let reply = raw.hello(&hid, TOKEN);
    assert_eq!(reply, json!({"ok": true, "ack_seq": N - 1}));
    drop(raw);
    signal(pid, nix::sys::signal::Signal::SIGTERM);
    let st = wait_timeout(&mut child, Duration::from_secs(10)).expect("exit on SIGTERM");
    assert_eq!(st.code(), Some(0));
    let mut seqs = log_seqs(&logs.join(format!("{hid}.log")));
    seqs.sort();
    assert_eq!(seqs, (0..N).collect::<Vec<_>>());
}
