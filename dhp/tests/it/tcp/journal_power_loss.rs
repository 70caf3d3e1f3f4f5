//! Acked lines survive a power loss. The server syncs only its journal
//! before acking; the per-handoff logs are synced at checkpoints. So after
//! a SIGKILL, a power loss may have taken any log write not yet synced:
//! the test simulates that by deleting, emptying and tearing the logs,
//! restarts the server, and checks that the replayed journal restored
//! every acked line, byte for byte, without duplicates, and that a clean
//! stop then checkpoints (no journal left).
use crate::tcp_support::*;
use serde_json::json;
use std::path::Path;

const N: i64 = 30;

fn journals(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".dhpj"))
        .count()
}

#[test]
fn acked_lines_survive_losing_unsynced_log_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    let mut srv = Server::start_capturing(&logs, &[], &tmp.path().join("server.err"));

    let hids: Vec<String> = (0..4)
        .map(|k| {
            let (env, hid) = envelope(10 + k, 1000);
            ship_sync(&srv.addr(), &env, &hid, N, |seq| json!({"k": k, "n": seq}));
            hid
        })
        .collect();
    let before: Vec<Vec<u8>> = hids.iter().map(|h| std::fs::read(srv.log(h)).unwrap()).collect();
    srv.kill9();
    assert_eq!(journals(&logs), 1, "the journal holds the acked lines");

    // What a power loss may do to never-synced log writes.
    std::fs::remove_file(srv.log(&hids[0])).unwrap();
    std::fs::write(srv.log(&hids[1]), b"").unwrap();
    let torn = &before[2][..before[2].len() / 2];
    std::fs::write(srv.log(&hids[2]), torn).unwrap();
    // hids[3]: intact.

    srv.restart();
    // The replay ran before the server announced its address.
    assert!(srv.stderr_text().contains("replayed the journal"));
    for (i, hid) in hids.iter().enumerate() {
        let log = srv.log(hid);
        let mut seqs = log_seqs(&log);
        seqs.sort();
        assert_eq!(seqs, (0..N).collect::<Vec<_>>(), "handoff {i}: seqs after replay");
        let now = std::fs::read(&log).unwrap();
        if i == 2 {
            // The torn fragment is ended by a newline (ingest skips it); the
            // lines after it are the lost ones, intact.
            assert!(now.starts_with(torn), "the surviving prefix is kept");
            assert!(before[2].ends_with(&now[now.len() - 200..]));
        } else {
            assert_eq!(now, before[i], "handoff {i}: the log is restored byte for byte");
        }
        let rep = ingest_ours(&tmp.path().join(format!("fresh{i}")), &log);
        assert_eq!(rep["checkpoints_ingested"], N);
        assert_eq!(rep["gaps"], json!([]));
    }
    assert_eq!(journals(&logs), 1, "replayed journals are removed, a fresh one started");

    // A clean stop checkpoints: logs synced, journal deleted.
    assert_eq!(srv.term(), 0);
    assert_eq!(journals(&logs), 0);
}
