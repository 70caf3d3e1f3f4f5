//! Throughput over loopback (ignored; run by scripts/measure_tcp.sh):
//! our TcpShipper → our server (sync and async) and the reference's
//! NetShipper → the reference's TransportServer, in the same run.
//!
//! `TCP_MEASURE_N` checkpoints per run (default 2000). Each figure is
//! checkpoints shipped and acknowledged per second, local buffer log on.
use crate::tcp_support::*;
use dhp_core::transport::net::{BufferLog, ShipMode, ShipperOptions, TcpShipper};
use dhp_core::transport::Shipper;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Instant;

fn ours(addr: &str, dir: &std::path::Path, mode: ShipMode, n: i64, lo: u64) -> (f64, String) {
    let (env, hid) = envelope(lo, lo + 1000);
    let mut sh = TcpShipper::new(
        addr,
        ShipperOptions {
            token: TOKEN.into(),
            mode,
            buffer: Some(BufferLog::Dir(dir.join("buf"))),
            ..Default::default()
        },
    )
    .unwrap();
    sh.ship_envelope(&hid, &env).unwrap();
    let t0 = Instant::now();
    for i in 0..n {
        let line = cp_line(i, &json!({"n": i, "count": 3 * i, "total": i * i}));
        sh.ship_checkpoint(&hid, i, &line).unwrap();
    }
    sh.flush().unwrap();
    let dt = t0.elapsed().as_secs_f64();
    sh.close().unwrap();
    (n as f64 / dt, hid)
}

fn reference(addr_host: &str, port: u16, dir: &std::path::Path, n: i64) -> f64 {
    let v: serde_json::Value = {
        let out = Command::new(python())
            .arg(py_script("ref_ship_bench.py"))
            .args([addr_host, &port.to_string(), &n.to_string(), dir.join("ref-local.log").to_str().unwrap()])
            .args(["--token", TOKEN])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(out.stdout.trim_ascii()).unwrap()
    };
    v["per_s"].as_f64().unwrap()
}

#[test]
#[ignore = "measurement; run scripts/measure_tcp.sh"]
fn measure_loopback_throughput() {
    let n: i64 = std::env::var("TCP_MEASURE_N").ok().and_then(|s| s.parse().ok()).unwrap_or(2000);
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(&tmp.path().join("ours"));
    let (sync, hid_s) = ours(&srv.addr(), tmp.path(), ShipMode::Sync, n, 1_000_000);
    let (asyn, hid_a) = ours(&srv.addr(), tmp.path(), ShipMode::Async { max_lag: 256 }, n, 2_000_000);
    assert_eq!(log_seqs(&srv.log(&hid_s)).len() as i64, n);
    assert_eq!(log_seqs(&srv.log(&hid_a)).len() as i64, n);
    // The reference's NetShipper into our server, for scale.
    let ref_to_ours = reference("127.0.0.1", srv.port, tmp.path(), n);

    // The reference's TransportServer in its own process, like ours.
    let mut child = Command::new(python())
        .arg(refctl_path())
        .args(["net-serve", tmp.path().join("ref").to_str().unwrap(), "--port", "0", "--token", TOKEN])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut first).unwrap();
    let port = serde_json::from_str::<serde_json::Value>(&first).unwrap()["port"].as_u64().unwrap() as u16;
    let ref_to_ref = reference("127.0.0.1", port, tmp.path(), n);
    let (ours_to_ref, _) =
        ours(&format!("127.0.0.1:{port}"), tmp.path(), ShipMode::Async { max_lag: 256 }, n, 3_000_000);
    signal(child.id(), nix::sys::signal::Signal::SIGTERM);
    let _ = child.wait();

    println!("checkpoints/s over loopback, {n} checkpoints each, local buffer log on:");
    println!("  ours sync   (TcpShipper -> dhp transport)      {sync:>10.0}");
    println!("  ours async  (TcpShipper -> dhp transport)      {asyn:>10.0}");
    println!("  reference   (NetShipper -> TransportServer)    {ref_to_ref:>10.0}");
    println!("  mixed       (NetShipper -> dhp transport)      {ref_to_ours:>10.0}");
    println!("  mixed       (TcpShipper async -> TransportServer) {ours_to_ref:>7.0}");
}
