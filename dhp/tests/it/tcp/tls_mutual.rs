//! Mutual TLS: a server started with `--tls-client-ca` accepts a shipper
//! presenting a client certificate signed by that CA, through the library
//! and through `dhp work --tls-cert --tls-key`.
use crate::tcp_support::pki::{Serve, TlsBed};
use crate::tcp_support::*;
use dhp_core::transport::Shipper;
use serde_json::json;
use std::time::Duration;

#[test]
fn client_certificate_is_accepted() {
    let bed = TlsBed::start(Serve::Mutual);
    let (env, hid) = envelope(0, 100);
    let mut sh = bed.shipper(Some(bed.pki.client("ca.pem", true)));
    sh.ship_envelope(&hid, &env).unwrap();
    for seq in 0..5 {
        sh.ship_checkpoint(&hid, seq, &cp_line(seq, &json!({"n": seq}))).unwrap();
    }
    sh.close().unwrap();
    assert_eq!(log_seqs(&bed.srv.log(&hid)), (0..5).collect::<Vec<_>>());

    let p = |n: &str| bed.pki.path(n).display().to_string();
    let flags = ["--tls-ca", &p("ca.pem"), "--tls-cert", &p("client.pem"), "--tls-key", &p("client.key")];
    let (hid, (code, out, err)) = bed.work(2002, &flags, Duration::from_secs(60));
    assert_eq!(code, 0, "{out} {err}");
    bed.assert_log_matches_store(&hid);
    bed.assert_no_tls_failure();
}
