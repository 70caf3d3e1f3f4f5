//! `dhp transport` under `ulimit -n 128` with 300 idle connections that
//! never say hello (issue 47: every server bounded): its caps fit the
//! descriptor budget (21 connections, 15 without a hello), so `accept`
//! never runs out of descriptors, the oldest strangers are closed for
//! newcomers, and a shipper ships at once — not after the strangers' 5 s
//! hello deadline has let the backlog through.
use crate::tcp_support::*;
use dhp_core::transport::net::{ShipMode, ShipperOptions, TcpShipper};
use dhp_core::transport::Shipper;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn a_shipper_ships_through_an_idle_flood_under_a_low_fd_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let logdir = tmp.path().join("logs");
    // the limit in the server's own process (prlimit, util-linux), not in the test's
    let child = Command::new("prlimit")
        .args(["--nofile=128:128", "--"])
        .arg(dhp_bin())
        .arg("transport")
        .arg(&logdir)
        .args(["--host", "127.0.0.1", "--port", "0"])
        .env("DHP_TRANSPORT_TOKEN", TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("prlimit (util-linux) running dhp transport");
    let mut child = crate::metrics_support::Proc(child);
    let mut first = String::new();
    BufReader::new(child.0.stdout.as_mut().unwrap()).read_line(&mut first).unwrap();
    let port = first
        .strip_prefix("dhp transport: listening on 127.0.0.1:")
        .and_then(|r| r.split(',').next())
        .and_then(|p| p.parse::<u16>().ok())
        .unwrap_or_else(|| panic!("{first}"));
    let addr = format!("127.0.0.1:{port}");
    let idle: Vec<TcpStream> = (0..300).filter_map(|_| TcpStream::connect(&addr).ok()).collect();
    assert_eq!(idle.len(), 300, "the kernel's backlog takes them all");
    std::thread::sleep(Duration::from_millis(500));
    let t0 = Instant::now();
    let (env, hid) = envelope(1, 100);
    let opts = ShipperOptions {
        token: TOKEN.into(),
        mode: ShipMode::Sync,
        call_timeout: Duration::from_secs(30),
        ..Default::default()
    };
    let mut sh = TcpShipper::new(&addr, opts).unwrap();
    sh.ship_envelope(&hid, &env).unwrap();
    for s in 0..5 {
        sh.ship_checkpoint(&hid, s, &cp_line(s, &json!({"s": s}))).unwrap();
    }
    let took = t0.elapsed();
    sh.close().unwrap();
    assert!(child.0.try_wait().unwrap().is_none(), "the server is still up");
    assert!(took < Duration::from_secs(4), "shipped only after {took:?} (the hello deadline is 5 s)");
    println!("shipped 5 checkpoints {took:?} after 300 idle connections under ulimit -n 128");
    drop(idle);
}
