//! A shipper that trusts another CA than the one that signed the server's
//! certificate fails the handshake with `Error::Tls` (unknown issuer),
//! promptly, through the library and `dhp work` (exit 10); the server logs
//! a warning and writes nothing.

mod tcp_support;

use dhp_core::Error;
use std::time::Duration;
use tcp_support::pki::{await_tls_warning, log_files, ship_fails, strs, Pki};
use tcp_support::*;

#[test]
fn untrusted_server_certificate_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = Pki::new(&tmp.path().join("pki"));
    let logs = tmp.path().join("logs");
    let srv = Server::start_capturing(&logs, &strs(&pki.server_args(false, false)), &tmp.path().join("server.err"));

    let e = ship_fails(&srv.addr(), Some(pki.client("other-ca.pem", false)));
    assert!(matches!(e, Error::Tls { .. }), "{e:?}");
    let text = e.to_string();
    assert!(text.contains("UnknownIssuer") || text.contains("unknown issuer"), "{text}");
    assert!(std::error::Error::source(&e).is_some());
    await_tls_warning(&srv);

    let root = tmp.path().join("root");
    let hid = census(&root, 2, 1002, 100);
    let ca = pki.path("other-ca.pem");
    let (code, out, err) = finish(
        spawn_work(&root, "w1", &hid, &["--ship-to", &srv.addr(), "--tls-ca", ca.to_str().unwrap()], &tok()),
        Duration::from_secs(30),
    );
    assert_eq!(code, 10, "{out} {err}");
    assert_eq!(out["error_kind"], "TransportError");
    assert!(err.contains("TLS"), "{err}");
    assert_eq!(log_files(&logs), 0, "nothing may be logged");
}
