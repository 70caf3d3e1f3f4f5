//! A TLS shipper talking to a plaintext port: the server recognises the
//! ClientHello, logs a warning and closes at once, and the shipper fails
//! with `Error::Tls` suggesting a plaintext port (not after its timeout).
//! A plaintext client on the same server still works.
use crate::tcp_support::pki::{Serve, TlsBed};
use crate::tcp_support::*;
use serde_json::json;

#[test]
fn tls_client_on_a_plaintext_port_fails() {
    let bed = TlsBed::start(Serve::Plaintext);
    let e = bed.refused(Some(bed.pki.client("ca.pem", false)));
    assert!(e.to_string().contains("plaintext port"), "{e}");

    let (_, hid) = envelope(0, 100);
    let mut c = Raw::connect(&bed.srv.addr());
    assert_eq!(c.hello(&hid, TOKEN), json!({"ok": true, "ack_seq": -1}));
}
