//! Acks written by the journal's sync thread (issue 49, item 4) keep each
//! connection's order: a client pipelines checkpoints and malformed frames
//! without reading, each frame in its own segment after a short, varying
//! pause, so some refusals reach the server while the acks before them are
//! still waiting for their sync. The replies must come back in the order of
//! the frames, every checkpoint acked exactly once.
use crate::tcp_support::*;
use serde_json::{json, Value};
use std::time::Duration;

const ROUNDS: i64 = 150;

#[test]
fn replies_keep_the_order_of_their_frames() {
    let srv = InProcess::start(true);
    let (env, hid) = envelope(50_000, 60_000);
    let mut c = Raw::connect(&srv.addr);
    c.w.set_nodelay(true).unwrap();
    assert_eq!(c.hello(&hid, TOKEN)["ok"], true);
    // Send everything first (a writer thread), read after: nothing waits
    // for a reply before the next frame goes.
    let mut w = c.w.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let mut frames = vec![dhp_core::json::dumps_sorted(&json!({"type": "envelope", "envelope": env})).unwrap()];
        for seq in 0..ROUNDS {
            frames.push(cp_line(seq, &json!({"seq": seq})));
            frames.push("{not json".to_string());
        }
        for (i, f) in frames.iter().enumerate() {
            w.write_all(format!("{f}\n").as_bytes()).unwrap();
            // 0–300 µs apart: some refusals land while acks wait for a sync
            std::thread::sleep(Duration::from_micros((i as u64 * 37) % 300));
        }
    });
    let mut got: Vec<Value> = Vec::new();
    for _ in 0..(1 + 2 * ROUNDS) {
        got.push(c.recv().expect("a reply for every frame"));
    }
    writer.join().unwrap();
    assert_eq!(got[0], json!({"ok": true}), "the envelope's ack first");
    for seq in 0..ROUNDS {
        let (ack, refusal) = (&got[1 + 2 * seq as usize], &got[2 + 2 * seq as usize]);
        assert_eq!(ack, &json!({"ok": true, "seq": seq}), "reply {} out of order: {got:?}", 1 + 2 * seq);
        assert_eq!(refusal["ok"], false, "reply {} out of order: {ack} then {refusal}", 2 + 2 * seq);
    }
    let stats = srv.stop();
    assert_eq!(stats.checkpoints_appended, ROUNDS as u64, "{stats:?}");
}
