//! A shipper that trusts another CA than the one that signed the server's
//! certificate fails the handshake with `Error::Tls` (unknown issuer),
//! promptly, through the library and `dhp work` (exit 10); the server logs
//! a warning and writes nothing.
use crate::tcp_support::pki::{log_files, Serve, TlsBed};
use std::time::Duration;

#[test]
fn untrusted_server_certificate_fails() {
    let bed = TlsBed::start(Serve::Tls);
    let e = bed.refused(Some(bed.pki.client("other-ca.pem", false)));
    let text = e.to_string();
    assert!(text.contains("UnknownIssuer") || text.contains("unknown issuer"), "{text}");
    assert!(std::error::Error::source(&e).is_some());

    let ca = bed.pki.path("other-ca.pem");
    let (_, (code, out, err)) = bed.work(1002, &["--tls-ca", ca.to_str().unwrap()], Duration::from_secs(30));
    assert_eq!(code, 10, "{out} {err}");
    assert_eq!(out["error_kind"], "TransportError");
    assert!(err.contains("TLS"), "{err}");
    assert_eq!(log_files(&bed.logs), 0, "nothing may be logged");
}
