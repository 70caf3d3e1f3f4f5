//! TLS round trip: a `dhp transport --tls-cert --tls-key` server, a
//! library shipper trusting the test CA ships synchronously (every
//! returned checkpoint is already in the server's log), and `dhp work
//! --ship-to --tls-ca` ships a whole census whose log then ingests into
//! the same rows as the store.
use crate::tcp_support::pki::{Serve, TlsBed};
use crate::tcp_support::*;
use dhp_core::transport::Shipper;
use serde_json::json;
use std::time::Duration;

#[test]
fn shipping_through_tls_round_trips() {
    let bed = TlsBed::start(Serve::Tls);
    let (env, hid) = envelope(0, 1000);
    let mut sh = bed.shipper(Some(bed.pki.client("ca.pem", false)));
    sh.ship_envelope(&hid, &env).unwrap();
    for seq in 0..40 {
        sh.ship_checkpoint(&hid, seq, &cp_line(seq, &json!({"n": seq}))).unwrap();
        assert!(log_seqs(&bed.srv.log(&hid)).contains(&seq), "seq {seq} returned but is not in the log");
    }
    assert_eq!(sh.acked_seq(&hid).unwrap(), 39);
    sh.close().unwrap();
    assert_eq!(log_seqs(&bed.srv.log(&hid)), (0..40).collect::<Vec<_>>());

    // The CLI, end to end.
    let ca = bed.pki.path("ca.pem");
    let flags = ["--ship-mode", "sync", "--tls-ca", ca.to_str().unwrap()];
    let (hid, (code, out, err)) = bed.work(5002, &flags, Duration::from_secs(60));
    assert_eq!(code, 0, "{out} {err}");
    assert_eq!(out["completed"], true);
    bed.assert_log_matches_store(&hid);
    bed.assert_no_tls_failure();
}
