//! Synchronous shipping rate with durable acks against `--no-fsync`
//! (ignored: a measurement; run with `--ignored --nocapture`). One shipper,
//! and 8 shippers on 8 handoffs at once (group commit across connections).
//! `TCP_FSYNC_N` checkpoints per shipper (default 500).
use crate::tcp_support::*;
use dhp_core::transport::net::{ShipMode, ShipperOptions, TcpShipper};
use dhp_core::transport::Shipper;
use serde_json::json;
use std::time::Instant;

fn rate(extra: &[&str], shippers: u64, n: i64) -> f64 {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start_with(&tmp.path().join("logs"), 0, &[("DHP_TRANSPORT_TOKEN", TOKEN)], extra);
    let t0 = Instant::now();
    let threads: Vec<_> = (0..shippers)
        .map(|k| {
            let addr = srv.addr();
            std::thread::spawn(move || {
                let (env, hid) = envelope(100 + k, 2000);
                let opts = ShipperOptions { token: TOKEN.into(), mode: ShipMode::Sync, ..Default::default() };
                let mut sh = TcpShipper::new(&addr, opts).unwrap();
                sh.ship_envelope(&hid, &env).unwrap();
                for i in 0..n {
                    sh.ship_checkpoint(&hid, i, &cp_line(i, &json!({"n": i}))).unwrap();
                }
                sh.close().unwrap();
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    (shippers as f64 * n as f64) / t0.elapsed().as_secs_f64()
}

#[test]
#[ignore]
fn measure_sync_rate_with_and_without_fsync() {
    let n: i64 = std::env::var("TCP_FSYNC_N").ok().and_then(|v| v.parse().ok()).unwrap_or(500);
    for shippers in [1, 8, 32] {
        let off = rate(&["--no-fsync"], shippers, n);
        let on = rate(&[], shippers, n);
        println!(
            "sync checkpoints/s, {shippers} shipper(s) x {n}: --no-fsync {off:.0}, fsync {on:.0}, ratio {:.2}",
            on / off
        );
    }
}
