//! The pre-hello limits hold for TLS: a connection that never completes
//! its handshake is closed at the hello deadline (5 s), and 300 such
//! strangers from one address (over the 256-per-address cap) do not keep
//! a TLS shipper out: the oldest are closed to make room.
use crate::tcp_support::pki::{Serve, TlsBed};
use crate::tcp_support::*;
use dhp_core::transport::Shipper;
use serde_json::json;
use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

#[test]
fn stalled_handshakes_are_bounded() {
    let bed = TlsBed::start(Serve::Tls);
    let t0 = Instant::now();
    let mut first = TcpStream::connect(bed.srv.addr()).unwrap();
    let strangers: Vec<TcpStream> = (0..300).map(|_| TcpStream::connect(bed.srv.addr()).unwrap()).collect();

    let (env, hid) = envelope(0, 100);
    let mut sh = bed.shipper(Some(bed.pki.client("ca.pem", false)));
    sh.ship_envelope(&hid, &env).unwrap();
    sh.ship_checkpoint(&hid, 0, &cp_line(0, &json!({"n": 0}))).unwrap();
    assert!(t0.elapsed() < Duration::from_secs(4), "the shipper waited {:?}", t0.elapsed());
    sh.close().unwrap();

    // The first stranger: evicted for room, or closed at the deadline.
    first.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut b = [0u8; 64];
    assert!(matches!(first.read(&mut b), Ok(0) | Err(_)), "the stalled handshake was not closed");
    // The last one: closed at the 5 s hello deadline.
    let mut last = strangers.into_iter().last().unwrap();
    last.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert!(matches!(last.read(&mut b), Ok(0) | Err(_)), "the stalled handshake was not closed");
    let waited = t0.elapsed();
    assert!(waited >= Duration::from_secs(4) && waited < Duration::from_secs(9), "closed after {waited:?}");
}
