//! Under mutual TLS (`--tls-client-ca`), a shipper without a client
//! certificate is refused: `Error::Tls` naming the server's alert (under
//! TLS 1.3 the refusal arrives after the client's side of the handshake,
//! with the hello's reply), and a warning on the server.
use crate::tcp_support::pki::{Serve, TlsBed};

#[test]
fn missing_client_certificate_fails() {
    let bed = TlsBed::start(Serve::Mutual);
    let e = bed.refused(Some(bed.pki.client("ca.pem", false)));
    assert!(e.to_string().contains("CertificateRequired"), "{e}");
    assert!(bed.srv.stderr_text().contains("peer sent no certificates"), "{}", bed.srv.stderr_text());
}
