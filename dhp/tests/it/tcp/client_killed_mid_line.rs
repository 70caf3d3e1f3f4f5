//! A shipping client is SIGKILLed in the middle of a line: half a frame
//! is on the wire and half a line in its local buffer log. The server
//! appends nothing of the torn frame; its log ingests cleanly; the
//! client's buffer log ingests with the torn line skipped (ours and the
//! reference's ingest alike); and a new shipper resuming from that buffer
//! ships on without gluing its next line to the torn one.
use crate::tcp_support::*;
use dhp_core::transport::net::{BufferLog, ShipMode, ShipperOptions, TcpShipper};
use dhp_core::transport::Shipper;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn client_killed_mid_line() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(&tmp.path().join("logs"));
    let (env, hid) = envelope(1000, 2000);
    let env_file = tmp.path().join("env.json");
    std::fs::write(&env_file, serde_json::to_vec(&env).unwrap()).unwrap();
    let local = tmp.path().join("client-buffer.log");
    const K: i64 = 5;

    let mut client = Command::new(python())
        .arg(py_script("partial_client.py"))
        .args(["127.0.0.1", &srv.port.to_string(), TOKEN, env_file.to_str().unwrap(), local.to_str().unwrap()])
        .arg(K.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    BufReader::new(client.stdout.as_mut().unwrap()).read_line(&mut ready).unwrap();
    assert!(ready.contains("\"ready\": true"), "client not ready: {ready:?}");
    client.kill().unwrap(); // SIGKILL with half a line sent
    client.wait().unwrap();

    // Server: K whole checkpoints, nothing of the torn one.
    let log = srv.log(&hid);
    // Give the server time to see the half line and the close.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(log_seqs(&log), (0..K).collect::<Vec<_>>());
    assert_eq!(line_count(&log), K as usize + 1, "header + {K} checkpoints, no torn line");
    let rep = ingest_ours(&tmp.path().join("fresh-server"), &log);
    assert_eq!(rep["checkpoints_ingested"], K);
    assert_eq!(rep["lines_skipped"], 0);

    // Client buffer: the torn line is there, and skipped at ingest.
    let data = std::fs::read(&local).unwrap();
    assert_ne!(data.last(), Some(&b'\n'), "the buffer log should end torn");
    let rep = ingest_ours(&tmp.path().join("fresh-local"), &local);
    assert_eq!(rep["checkpoints_ingested"], K);
    assert_eq!(rep["lines_skipped"], 1);
    let r = refctl_ok(&["ingest", tmp.path().join("ref-local").to_str().unwrap(), local.to_str().unwrap()], &[]);
    assert_eq!(r["checkpoints_ingested"], K);
    assert_eq!(r["lines_skipped"], 1);

    // A new shipper resumes from the same buffer log: the server says it
    // holds 0..K-1, seq K (torn, never acked) is shipped fresh.
    let mut sh = TcpShipper::new(
        &srv.addr(),
        ShipperOptions {
            token: TOKEN.into(),
            mode: ShipMode::Sync,
            buffer: Some(BufferLog::File(local.clone())),
            call_timeout: Duration::from_secs(10),
            ..Default::default()
        },
    )
    .unwrap();
    sh.ship_envelope(&hid, &env).unwrap();
    assert_eq!(sh.acked_seq(&hid).unwrap(), K - 1);
    for seq in K..K + 3 {
        sh.ship_checkpoint(&hid, seq, &cp_line(seq, &json!({"next_n": 100 + seq, "count": seq, "total": seq * 7})))
            .unwrap();
    }
    assert_eq!(sh.acked_seq(&hid).unwrap(), K + 2);
    sh.close().unwrap();
    assert_eq!(log_seqs(&log), (0..K + 3).collect::<Vec<_>>());
    let rep = ingest_ours(&tmp.path().join("fresh-server2"), &log);
    assert_eq!((rep["checkpoints_new"].as_i64(), rep["lines_skipped"].as_i64()), (Some(K + 3), Some(0)));
    // The torn line was terminated, not glued to: one skipped, the rest whole.
    let rep = ingest_ours(&tmp.path().join("fresh-local2"), &local);
    assert_eq!((rep["checkpoints_new"].as_i64(), rep["lines_skipped"].as_i64()), (Some(K + 3), Some(1)));
    assert_eq!(rep["gaps"], json!([]));
}
