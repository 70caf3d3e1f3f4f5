//! Line cap (DHP_TRANSPORT_MAX_LINE_BYTES=4096 on the server): an overlong
//! frame gets `line exceeds max line bytes` and is discarded without being
//! buffered, the frames after it are answered in order; an endless line is
//! cut off (the connection closes long before 64 MiB went through, and the
//! server's memory stays flat); other clients ship meanwhile. Our shipper
//! refuses an overlong line locally with a typed `Error::Oversize`, and a
//! line the server finds too long comes back as a transport error.
use crate::tcp_support::*;
use dhp_core::transport::net::{ShipMode, ShipperOptions, TcpShipper};
use dhp_core::transport::Shipper;
use dhp_core::{Config, Error};
use serde_json::json;
use std::io::Write;
use std::time::Duration;

fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines().find(|l| l.starts_with("VmRSS:")).unwrap().split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn oversize_lines_are_capped() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start_with(
        &tmp.path().join("logs"),
        0,
        &[("DHP_TRANSPORT_TOKEN", TOKEN), ("DHP_TRANSPORT_MAX_LINE_BYTES", "4096")],
        &[],
    );
    let (env, hid) = envelope(1, 2);

    let mut c = Raw::connect(&srv.addr());
    assert_eq!(c.hello(&hid, TOKEN)["ok"], true);
    assert_eq!(c.rpc(&json!({"type": "envelope", "envelope": env})), json!({"ok": true}));
    // An overlong checkpoint (a valid frame, just too big), then a good one,
    // pipelined: replies come back in order.
    let big = cp_line(0, &json!({"blob": "x".repeat(5000)}));
    let good = cp_line(0, &json!({"n": 0}));
    c.send(format!("{big}\n{good}\n").as_bytes());
    assert_eq!(c.recv().unwrap(), json!({"ok": false, "error": "line exceeds max line bytes (4096)"}));
    assert_eq!(c.recv().unwrap(), json!({"ok": true, "seq": 0}));

    // An endless line: the server cuts it off and never holds it.
    let rss_before = rss_kib(srv.child.id());
    let mut flood = Raw::connect(&srv.addr());
    assert_eq!(flood.hello(&hid, TOKEN)["ok"], true);
    let chunk = vec![b'x'; 1 << 20];
    let mut sent = 0usize;
    let writer = std::thread::spawn({
        let mut w = flood.w.try_clone().unwrap();
        move || {
            for _ in 0..256 {
                if w.write_all(&chunk).is_err() {
                    return sent;
                }
                sent += chunk.len();
            }
            sent
        }
    });
    // Meanwhile another client ships normally.
    let mut sh = TcpShipper::new(
        &srv.addr(),
        ShipperOptions {
            token: TOKEN.into(),
            mode: ShipMode::Sync,
            call_timeout: Duration::from_secs(10),
            cfg: Config::default(), // 2 MB cap on our side: the server's is smaller
            ..Default::default()
        },
    )
    .unwrap();
    sh.ship_envelope(&hid, &env).unwrap();
    for seq in 1..20 {
        sh.ship_checkpoint(&hid, seq, &cp_line(seq, &json!({"n": seq}))).unwrap();
    }
    let sent = writer.join().unwrap();
    assert!(sent < 16 << 20, "server kept reading an endless line ({sent} bytes)");
    let reply = flood.recv();
    assert!(
        reply.is_none() || reply == Some(json!({"ok": false, "error": "line exceeds max line bytes (4096)"})),
        "{reply:?}"
    );
    let rss_after = rss_kib(srv.child.id());
    assert!(rss_after < rss_before + 32 * 1024, "server memory grew from {rss_before} KiB to {rss_after} KiB");

    // A line the server finds too long: refused, typed, not retried forever.
    let e = sh.ship_checkpoint(&hid, 20, &cp_line(20, &json!({"blob": "y".repeat(5000)}))).unwrap_err();
    assert!(
        matches!(e, Error::Transport { kind: dhp_core::TransportKind::Refused, detail: ref m, .. } if m.contains("exceeds max line bytes")),
        "{e:?}"
    );
    sh.ship_checkpoint(&hid, 20, &cp_line(20, &json!({"n": 20}))).unwrap();
    sh.close().unwrap();

    // Our own cap, checked before anything is written or sent.
    let small = Config { transport_max_line_bytes: 4096, ..Config::default() };
    let mut sh =
        TcpShipper::new(&srv.addr(), ShipperOptions { token: TOKEN.into(), cfg: small, ..Default::default() }).unwrap();
    let e = sh.ship_checkpoint(&hid, 21, &cp_line(21, &json!({"blob": "z".repeat(5000)}))).unwrap_err();
    assert!(matches!(e, Error::Oversize { limit: 4096, .. }), "{e:?}");
    assert_eq!(e.kind(), "OversizePayload");
    drop(sh);

    let log = srv.log(&hid);
    assert_eq!(log_seqs(&log), (0..=20).collect::<Vec<_>>());
    let rep = ingest_ours(&tmp.path().join("fresh"), &log);
    assert_eq!((rep["checkpoints_new"].as_i64(), rep["lines_skipped"].as_i64()), (Some(21), Some(0)));
}
