//! A server presenting an expired certificate (valid only in 2020, signed
//! by the trusted CA) fails the shipper's handshake with `Error::Tls`
//! naming the expiry; the server logs a warning (the client's alert).
use crate::tcp_support::pki::{Serve, TlsBed};

#[test]
fn expired_server_certificate_fails() {
    let bed = TlsBed::start(Serve::Expired);
    let e = bed.refused(Some(bed.pki.client("ca.pem", false)));
    assert!(e.to_string().to_lowercase().contains("expired"), "{e}");
}
