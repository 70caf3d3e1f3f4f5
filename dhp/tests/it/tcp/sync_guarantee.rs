//! Sync mode's promise: every checkpoint whose ship returned is already in
//! the server's log, even across server deaths. Checked after every single
//! return while the server is SIGKILLed and restarted twice; then through
//! the CLI (`--stop-after`: all shipped at exit); then for a worker
//! SIGKILLed between commit and ship (the peer is one short, never more,
//! and the recovering worker re-ships the missing one before going on).
use crate::tcp_support::*;
use dhp_core::transport::net::{BufferLog, ShipMode, ShipperOptions, TcpShipper};
use dhp_core::transport::{catch_up, log, Shipper};
use dhp_core::{envelope, json, Config, Runner, Supervisor};
use dhp_workload::census;
use serde_json::json;
use std::process::Command;
use std::time::Duration;

#[test]
fn every_returned_checkpoint_is_on_the_peer() {
    let tmp = tempfile::tempdir().unwrap();
    let mut srv = Server::start(&tmp.path().join("logs"));

    // --- library: check the server's log after each return ---
    let root = tmp.path().join("lib-root");
    let r = Runner::open(&root, "w-lib", Config::default()).unwrap();
    let env = envelope::build(census::KIND, census::inputs(0, 1000, 10), census::output_schema(), Default::default())
        .unwrap();
    let hid = r.dispatch(&env).unwrap();
    let ctx = r.claim(&hid).unwrap();
    let mut sh = TcpShipper::new(
        &srv.addr(),
        ShipperOptions {
            token: TOKEN.into(),
            mode: ShipMode::Sync,
            buffer: Some(BufferLog::Dir(tmp.path().join("buf"))),
            call_timeout: Duration::from_secs(20),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(catch_up(&mut sh, &r, &hid).unwrap(), 0);
    let log = srv.log(&hid);
    for i in 0..90u64 {
        if i == 30 || i == 60 {
            // Kill the server; bring it back a moment later from another
            // thread while this one is blocked in ship_checkpoint.
            srv.kill9();
            let (logdir, port) = (srv.logdir.clone(), srv.port);
            let h = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(700));
                Server::start_with(&logdir, port, &tok(), &[])
            });
            let state = json!({"next_n": i, "count": i, "total": i});
            let seq = ctx.checkpoint(&state).unwrap();
            let (_, hash) = json::state_text_and_hash(&state).unwrap();
            let line = log::checkpoint_line(seq, &state, &hash, &envelope::utcnow_iso()).unwrap();
            sh.ship_checkpoint(&hid, seq, &line).unwrap();
            assert!(log_seqs(&log).contains(&seq), "seq {seq} returned but is not on the peer");
            let fresh = h.join().unwrap();
            drop(std::mem::replace(&mut srv, fresh)); // the old one is dead already
            continue;
        }
        let state = json!({"next_n": i, "count": i, "total": i});
        let seq = ctx.checkpoint(&state).unwrap();
        let (_, hash) = json::state_text_and_hash(&state).unwrap();
        let line = log::checkpoint_line(seq, &state, &hash, &envelope::utcnow_iso()).unwrap();
        sh.ship_checkpoint(&hid, seq, &line).unwrap();
        assert!(log_seqs(&log).contains(&seq), "seq {seq} returned but is not on the peer");
        assert_eq!(sh.acked_seq(&hid).unwrap(), seq);
    }
    sh.close().unwrap();
    assert_log_matches_store(&log, &root, &hid, &tmp.path().join("fresh-lib"));

    // --- CLI: a worker that stops after 25 checkpoints shipped them all ---
    let root = tmp.path().join("cli-root");
    let hid = census(&root, 2, 10_002, 100);
    let (code, out, err) = finish(
        spawn_work(&root, "w1", &hid, &["--ship-to", &srv.addr(), "--ship-mode", "sync", "--stop-after", "25"], &tok()),
        Duration::from_secs(30),
    );
    assert_eq!(code, 3, "{out} {err}");
    assert_eq!(log_seqs(&srv.log(&hid)), (0..25).collect::<Vec<_>>());

    // --- killed between commit and ship: the peer is exactly one short ---
    let root = tmp.path().join("kill-root");
    let hid = census(&root, 2, 10_002, 100);
    let (code, out, err) = finish(
        spawn_work(
            &root,
            "w1",
            &hid,
            &["--ship-to", &srv.addr(), "--ship-mode", "sync", "--no-liveness"],
            &[("DHP_TRANSPORT_TOKEN", TOKEN), ("DHP_FAILPOINTS", "ship.after_commit=kill@20")],
        ),
        Duration::from_secs(30),
    );
    assert_ne!(code, 0, "the failpoint should have killed the worker: {out} {err}");
    assert_eq!(store_rows(&root, &hid).len(), 20);
    assert_eq!(log_seqs(&srv.log(&hid)), (0..19).collect::<Vec<_>>());
    // The lease runs out, the supervisor orphans, w2 recovers and re-ships.
    let r = Runner::open(&root, "test", Config::default()).unwrap();
    assert!(dhp_testkit::store::expire_lease(&r, &hid).unwrap());
    let sup = Supervisor::open(&root, "sup1", Config::default()).unwrap();
    assert!(sup.scan().unwrap().iter().any(|a| a.kind().as_str() == "orphaned"));
    let w2 = Command::new(dhp_bin())
        .args(["work", root.to_str().unwrap(), "--runner", "w2", "recover", &hid, "--json"])
        .args(["--ship-to", &srv.addr(), "--ship-mode", "sync", "--no-liveness"])
        .env("DHP_TRANSPORT_TOKEN", TOKEN)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (code, out, err) = finish(w2, Duration::from_secs(30));
    assert_eq!(code, 0, "{out} {err}");
    assert_eq!(out["completed"], true);
    assert_log_matches_store(&srv.log(&hid), &root, &hid, &tmp.path().join("fresh-kill"));
}
