//! A plaintext shipper talking to a TLS port gets the server's TLS alert
//! instead of a hello reply: `Error::Tls` saying the server expects TLS,
//! promptly (not after the call timeout); the server logs a warning.
use crate::tcp_support::pki::{Serve, TlsBed};

#[test]
fn plaintext_client_on_a_tls_port_fails() {
    let bed = TlsBed::start(Serve::Tls);
    let e = bed.refused(None);
    assert!(e.to_string().contains("expects TLS"), "{e}");
}
