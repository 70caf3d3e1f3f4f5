//! A TLS shipper talking to a plaintext port: the server recognises the
//! ClientHello, logs a warning and closes at once, and the shipper fails
//! with `Error::Tls` suggesting a plaintext port (not after its timeout).
//! A plaintext client on the same server still works.

mod tcp_support;

use dhp_core::Error;
use serde_json::json;
use tcp_support::pki::{await_tls_warning, log_files, ship_fails, Pki};
use tcp_support::*;

#[test]
fn tls_client_on_a_plaintext_port_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = Pki::new(&tmp.path().join("pki"));
    let logs = tmp.path().join("logs");
    let srv = Server::start_capturing(&logs, &[], &tmp.path().join("server.err"));

    let e = ship_fails(&srv.addr(), Some(pki.client("ca.pem", false)));
    assert!(matches!(e, Error::Tls { .. }), "{e:?}");
    assert!(e.to_string().contains("plaintext port"), "{e}");
    await_tls_warning(&srv);
    assert_eq!(log_files(&logs), 0, "nothing may be logged");

    let (_, hid) = envelope(0, 100);
    let mut c = Raw::connect(&srv.addr());
    assert_eq!(c.hello(&hid, TOKEN), json!({"ok": true, "ack_seq": -1}));
}
