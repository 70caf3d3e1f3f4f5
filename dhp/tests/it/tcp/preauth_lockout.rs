//! Strangers cannot lock the server out or balloon it: 4,100 idle
//! connections that never say hello (more than the 4,096 connection cap)
//! and 300 that push a 1 MiB line without a newline before any hello; an
//! authenticated shipper still ships synchronously in the middle of it,
//! a silent connection is closed after the hello deadline, and the
//! server's RSS is measured before, during and after.
use crate::tcp_support::*;
use dhp_core::transport::net::{ShipMode, ShipperOptions, TcpShipper};
use dhp_core::transport::Shipper;
use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn rss_mb(pid: u32) -> f64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: f64 =
        s.lines().find(|l| l.starts_with("VmRSS:")).unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
    kb / 1024.0
}

#[test]
fn idle_and_bloated_strangers_do_not_lock_out_a_shipper() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(&tmp.path().join("logs"));
    let pid = srv.child.id();
    let before = rss_mb(pid);

    let idle: Vec<TcpStream> = (0..4100).map(|_| TcpStream::connect(srv.addr()).unwrap()).collect();
    // Half-lines of 1 MiB each, never finished (the memory case).
    let junk = vec![b'x'; 1 << 20];
    let bloated: Vec<TcpStream> = (0..300)
        .map(|_| {
            let mut s = TcpStream::connect(srv.addr()).unwrap();
            s.set_write_timeout(Some(Duration::from_millis(200))).unwrap();
            // The server may cut us off part way: that is the point.
            let _ = s.write_all(&junk);
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let during = rss_mb(pid);

    // An authenticated client still gets in and ships synchronously.
    let (env, hid) = envelope(1, 100);
    let opts = ShipperOptions {
        token: TOKEN.into(),
        mode: ShipMode::Sync,
        call_timeout: Duration::from_secs(10),
        ..Default::default()
    };
    let mut sh = TcpShipper::new(&srv.addr(), opts).unwrap();
    sh.ship_envelope(&hid, &env).unwrap();
    for s in 0..20 {
        sh.ship_checkpoint(&hid, s, &cp_line(s, &json!({"s": s}))).unwrap();
    }
    assert_eq!(log_seqs(&srv.log(&hid)), (0..20).collect::<Vec<_>>());
    sh.close().unwrap();

    // A connection that never says hello is closed after the deadline.
    let mut silent = TcpStream::connect(srv.addr()).unwrap();
    silent.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let t0 = Instant::now();
    let mut b = [0u8; 64];
    let n = silent.read(&mut b).unwrap_or(0);
    assert_eq!(n, 0, "{:?}", String::from_utf8_lossy(&b[..n]));
    assert!(t0.elapsed() < Duration::from_secs(8), "closed after {:?}", t0.elapsed());

    drop(idle);
    drop(bloated);
    std::thread::sleep(Duration::from_secs(1));
    let after = rss_mb(pid);
    eprintln!("server RSS MB: before {before:.1}, during {during:.1}, after {after:.1}");
    assert!(during < before + 100.0, "RSS before {before:.1} MB, during {during:.1} MB");
    assert!(after < before + 60.0, "RSS before {before:.1} MB, after {after:.1} MB");
}
