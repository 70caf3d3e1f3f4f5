//! TLS round trip: a `dhp transport --tls-cert --tls-key` server, a
//! library shipper trusting the test CA ships synchronously (every
//! returned checkpoint is already in the server's log), and `dhp work
//! --ship-to --tls-ca` ships a whole census whose log then ingests into
//! the same rows as the store.

mod tcp_support;

use dhp_core::transport::net::{ShipMode, ShipperOptions, TcpShipper};
use dhp_core::transport::Shipper;
use serde_json::json;
use std::time::Duration;
use tcp_support::pki::{strs, Pki};
use tcp_support::*;

#[test]
fn shipping_through_tls_round_trips() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = Pki::new(&tmp.path().join("pki"));
    let srv = Server::start_capturing(
        &tmp.path().join("logs"),
        &strs(&pki.server_args(false, false)),
        &tmp.path().join("server.err"),
    );

    let (env, hid) = envelope(0, 1000);
    let mut sh = TcpShipper::new(
        &srv.addr(),
        ShipperOptions {
            token: TOKEN.into(),
            mode: ShipMode::Sync,
            call_timeout: Duration::from_secs(20),
            tls: Some(pki.client("ca.pem", false)),
            ..Default::default()
        },
    )
    .unwrap();
    sh.ship_envelope(&hid, &env).unwrap();
    for seq in 0..40 {
        sh.ship_checkpoint(&hid, seq, &cp_line(seq, &json!({"n": seq}))).unwrap();
        assert!(log_seqs(&srv.log(&hid)).contains(&seq), "seq {seq} returned but is not in the log");
    }
    assert_eq!(sh.acked_seq(&hid).unwrap(), 39);
    sh.close().unwrap();
    assert_eq!(log_seqs(&srv.log(&hid)), (0..40).collect::<Vec<_>>());

    // The CLI, end to end.
    let root = tmp.path().join("root");
    let hid = census(&root, 2, 5002, 100);
    let ca = pki.path("ca.pem");
    let (code, out, err) = finish(
        spawn_work(
            &root,
            "w1",
            &hid,
            &["--ship-to", &srv.addr(), "--ship-mode", "sync", "--tls-ca", ca.to_str().unwrap()],
            &tok(),
        ),
        Duration::from_secs(60),
    );
    assert_eq!(code, 0, "{out} {err}");
    assert_eq!(out["completed"], true);
    assert_log_matches_store(&srv.log(&hid), &root, &hid, &tmp.path().join("fresh"));
    assert!(!srv.stderr_text().contains("TLS failed"), "{}", srv.stderr_text());
}
