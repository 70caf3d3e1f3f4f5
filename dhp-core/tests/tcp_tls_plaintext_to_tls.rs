//! A plaintext shipper talking to a TLS port gets the server's TLS alert
//! instead of a hello reply: `Error::Tls` saying the server expects TLS,
//! promptly (not after the call timeout); the server logs a warning.

mod tcp_support;

use dhp_core::Error;
use tcp_support::pki::{await_tls_warning, log_files, ship_fails, strs, Pki};
use tcp_support::*;

#[test]
fn plaintext_client_on_a_tls_port_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = Pki::new(&tmp.path().join("pki"));
    let logs = tmp.path().join("logs");
    let srv = Server::start_capturing(&logs, &strs(&pki.server_args(false, false)), &tmp.path().join("server.err"));

    let e = ship_fails(&srv.addr(), None);
    assert!(matches!(e, Error::Tls { .. }), "{e:?}");
    assert!(e.to_string().contains("expects TLS"), "{e}");
    await_tls_warning(&srv);
    assert_eq!(log_files(&logs), 0, "nothing may be logged");
}
