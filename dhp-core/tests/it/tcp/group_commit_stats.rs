//! The server counts how its group commit groups: journal syncs, the lines
//! they covered, the time inside them, the wait from a line's journal
//! write to the sync that covers it, and from that sync to the ack. Eight
//! synchronous clients ship at once; every line is covered by exactly one
//! sync and every ack is counted. Without fsync nothing is counted.
use crate::tcp_support::*;
use dhp_core::transport::net::ServerStats;
use serde_json::json;

const CLIENTS: u64 = 8;
const LINES: i64 = 40;

fn run(fsync: bool) -> ServerStats {
    let srv = InProcess::start(fsync);
    let addr = srv.addr.clone();
    std::thread::scope(|s| {
        for k in 0..CLIENTS {
            let addr = addr.clone();
            s.spawn(move || {
                let (env, hid) = envelope(30_000 + k, 40_000);
                let mut c = Raw::connect(&addr);
                assert_eq!(c.hello(&hid, TOKEN)["ok"], true);
                assert_eq!(c.rpc(&json!({"type": "envelope", "envelope": env})), json!({"ok": true}));
                for seq in 0..LINES {
                    assert_eq!(c.rpc(&cp_frame(seq, &json!({"k": k, "s": seq}))), json!({"ok": true, "seq": seq}));
                }
            });
        }
    });
    srv.stop()
}

#[test]
fn group_commit_is_counted() {
    let lines = CLIENTS * (1 + LINES as u64);
    let s = run(true);
    assert_eq!(s.checkpoints_appended + s.envelopes, lines, "{s:?}");
    // One record per line, each covered by one sync.
    assert_eq!(s.journal_lines_synced, lines, "{s:?}");
    assert!(s.journal_syncs >= 1 && s.journal_syncs <= lines, "{s:?}");
    assert!(s.journal_sync_ns > 0, "{s:?}");
    // A client waits for each reply before sending again: one held ack
    // per line.
    assert_eq!(s.durable_acks, lines, "{s:?}");
    assert!(s.durable_ack_ns > 0, "{s:?}");

    let s = run(false);
    assert_eq!(s.checkpoints_appended + s.envelopes, lines, "{s:?}");
    let none = (s.journal_syncs, s.journal_lines_synced, s.journal_sync_ns, s.journal_wait_ns, s.durable_acks);
    assert_eq!(none, (0, 0, 0, 0, 0), "{s:?}");
}
