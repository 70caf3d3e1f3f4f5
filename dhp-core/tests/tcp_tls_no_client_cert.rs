//! Under mutual TLS (`--tls-client-ca`), a shipper without a client
//! certificate is refused: `Error::Tls` naming the server's alert (under
//! TLS 1.3 the refusal arrives after the client's side of the handshake,
//! with the hello's reply), and a warning on the server.

mod tcp_support;

use dhp_core::Error;
use tcp_support::pki::{await_tls_warning, log_files, ship_fails, strs, Pki};
use tcp_support::*;

#[test]
fn missing_client_certificate_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = Pki::new(&tmp.path().join("pki"));
    let logs = tmp.path().join("logs");
    let srv = Server::start_capturing(&logs, &strs(&pki.server_args(false, true)), &tmp.path().join("server.err"));

    let e = ship_fails(&srv.addr(), Some(pki.client("ca.pem", false)));
    assert!(matches!(e, Error::Tls { .. }), "{e:?}");
    assert!(e.to_string().contains("CertificateRequired"), "{e}");
    await_tls_warning(&srv);
    assert!(srv.stderr_text().contains("peer sent no certificates"), "{}", srv.stderr_text());
    assert_eq!(log_files(&logs), 0, "nothing may be logged");
}
