//! A server presenting an expired certificate (valid only in 2020, signed
//! by the trusted CA) fails the shipper's handshake with `Error::Tls`
//! naming the expiry; the server logs a warning (the client's alert).

mod tcp_support;

use dhp_core::Error;
use tcp_support::pki::{await_tls_warning, log_files, ship_fails, strs, Pki};
use tcp_support::*;

#[test]
fn expired_server_certificate_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = Pki::new(&tmp.path().join("pki"));
    let logs = tmp.path().join("logs");
    let srv = Server::start_capturing(&logs, &strs(&pki.server_args(true, false)), &tmp.path().join("server.err"));

    let e = ship_fails(&srv.addr(), Some(pki.client("ca.pem", false)));
    assert!(matches!(e, Error::Tls { .. }), "{e:?}");
    assert!(e.to_string().to_lowercase().contains("expired"), "{e}");
    await_tls_warning(&srv);
    assert_eq!(log_files(&logs), 0, "nothing may be logged");
}
