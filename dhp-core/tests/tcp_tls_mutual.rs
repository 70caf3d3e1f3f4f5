//! Mutual TLS: a server started with `--tls-client-ca` accepts a shipper
//! presenting a client certificate signed by that CA, through the library
//! and through `dhp work --tls-cert --tls-key`.

mod tcp_support;

use dhp_core::transport::net::{ShipMode, ShipperOptions, TcpShipper};
use dhp_core::transport::Shipper;
use serde_json::json;
use std::time::Duration;
use tcp_support::pki::{strs, Pki};
use tcp_support::*;

#[test]
fn client_certificate_is_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = Pki::new(&tmp.path().join("pki"));
    let srv = Server::start_capturing(
        &tmp.path().join("logs"),
        &strs(&pki.server_args(false, true)),
        &tmp.path().join("server.err"),
    );

    let (env, hid) = envelope(0, 100);
    let mut sh = TcpShipper::new(
        &srv.addr(),
        ShipperOptions {
            token: TOKEN.into(),
            mode: ShipMode::Sync,
            call_timeout: Duration::from_secs(20),
            tls: Some(pki.client("ca.pem", true)),
            ..Default::default()
        },
    )
    .unwrap();
    sh.ship_envelope(&hid, &env).unwrap();
    for seq in 0..5 {
        sh.ship_checkpoint(&hid, seq, &cp_line(seq, &json!({"n": seq}))).unwrap();
    }
    sh.close().unwrap();
    assert_eq!(log_seqs(&srv.log(&hid)), (0..5).collect::<Vec<_>>());

    let root = tmp.path().join("root");
    let hid = census(&root, 2, 2002, 100);
    let p = |n: &str| pki.path(n).display().to_string();
    let (code, out, err) = finish(
        spawn_work(
            &root,
            "w1",
            &hid,
            &[
                "--ship-to",
                &srv.addr(),
                "--tls-ca",
                &p("ca.pem"),
                "--tls-cert",
                &p("client.pem"),
                "--tls-key",
                &p("client.key"),
            ],
            &tok(),
        ),
        Duration::from_secs(60),
    );
    assert_eq!(code, 0, "{out} {err}");
    assert_log_matches_store(&srv.log(&hid), &root, &hid, &tmp.path().join("fresh"));
    assert!(!srv.stderr_text().contains("TLS failed"), "{}", srv.stderr_text());
}
