//! TCP checkpoint shipping to a dhp-core transport server on loopback:
//! synchronous (each ship waits for the server's ack) and asynchronous
//! (pipelined, bounded lag; the batch is flushed inside the measurement).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dhp_benches::tcp::{ShipBed, TcpServer};
use dhp_core::transport::net::ShipMode;
use std::time::{Duration, Instant};

fn ship(c: &mut Criterion) {
    let dir = tempfile::Builder::new().prefix("dhp-bench-ship-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let server = TcpServer::start(&dir.path().join("server-logs")).unwrap();
    let mut g = c.benchmark_group("ship_tcp");
    g.sample_size(20).measurement_time(Duration::from_secs(5)).warm_up_time(Duration::from_secs(1));
    g.throughput(Throughput::Elements(1));
    let mut sync = ShipBed::new(server.addr(), ShipMode::Sync, dir.path().join("sync.log"), 1).unwrap();
    g.bench_function("sync", |b| b.iter(|| sync.ship_next().unwrap()));
    let mut asy =
        ShipBed::new(server.addr(), ShipMode::Async { max_lag: 256 }, dir.path().join("async.log"), 2).unwrap();
    g.bench_function("async_max_lag_256", |b| {
        b.iter_custom(|iters| {
            let t = Instant::now();
            for _ in 0..iters {
                asy.ship_next().unwrap();
            }
            asy.flush().unwrap();
            t.elapsed()
        })
    });
    g.finish();
    drop(sync);
    drop(asy);
    let stats = server.stop().unwrap();
    assert_eq!(stats.frames_rejected, 0, "{stats:?}");
}

criterion_group!(benches, ship);
criterion_main!(benches);
