//! Durable store operations of dhp-core (WAL, synchronous=FULL, one
//! `BEGIN IMMEDIATE` transaction per operation): dispatch, claim,
//! checkpoint at depth, group commit, recover race, ingest, supervisor scan.
//!
//! Under `cargo test --benches` every function runs once with small sizes
//! (see `dhp_benches::bench_mode`).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use dhp_benches::fixture::{self, bench_config, CheckpointBed};
use dhp_benches::group::{self, Item};
use dhp_benches::{bench_mode, suite};
use dhp_core::store::SqliteStore;
use dhp_core::transport::log;
use dhp_core::{Runner, Supervisor};
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn base() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("dhp-bench-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("bench tempdir")
}

fn durable(c: &mut Criterion) -> criterion::BenchmarkGroup<'_, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group("store");
    g.sample_size(20).measurement_time(Duration::from_secs(5)).warm_up_time(Duration::from_secs(1));
    g
}

fn dispatch_claim(c: &mut Criterion) {
    let dir = base();
    let mut g = durable(c);
    g.throughput(Throughput::Elements(1));
    let r = Runner::open(fixture::fresh_root(dir.path(), "dispatch"), "w1", bench_config()).unwrap();
    let mut i = 0u64;
    g.bench_function("dispatch_sdk", |b| {
        b.iter(|| {
            i += 1;
            r.dispatch(&fixture::sdk_envelope(i).unwrap()).unwrap()
        })
    });
    let r = Runner::open(fixture::fresh_root(dir.path(), "claim"), "w1", bench_config()).unwrap();
    let mut next = 0u64;
    g.bench_function("claim", |b| {
        b.iter_custom(|iters| {
            let hids = fixture::bulk_dispatch(&r, next, iters).unwrap();
            next += iters;
            let t = Instant::now();
            for h in &hids {
                r.claim(h).unwrap();
            }
            t.elapsed()
        })
    });
    // Group commit: 32 dispatches / claims per transaction.
    let batch = 32u64;
    let cfg = bench_config();
    let r = Runner::open(fixture::fresh_root(dir.path(), "batched"), "w1", cfg.clone()).unwrap();
    let mut next = 1_000_000u64;
    let mut made: Vec<String> = Vec::new();
    g.throughput(Throughput::Elements(batch));
    g.bench_function("dispatch_many_32", |b| {
        b.iter(|| {
            let envs: Vec<_> = (next..next + batch).map(|i| fixture::sdk_envelope(i).unwrap()).collect();
            next += batch;
            for h in group::dispatch_many(&r, &envs).unwrap() {
                made.push(h.unwrap());
            }
        })
    });
    g.bench_function("claim_many_32", |b| {
        b.iter_custom(|iters| {
            let hids = fixture::bulk_dispatch(&r, next, iters * batch).unwrap();
            next += iters * batch;
            let t = Instant::now();
            for c in hids.chunks(batch as usize) {
                for f in group::claim_many(&r, "w1", c).unwrap() {
                    f.unwrap();
                }
            }
            t.elapsed()
        })
    });
    g.finish();
}

fn checkpoint_depth(c: &mut Criterion) {
    let dir = base();
    let depths: &[i64] = if bench_mode() { &[100, 1_000, 10_000, 100_000] } else { &[100, 1_000] };
    let mut g = durable(c);
    g.throughput(Throughput::Elements(1));
    for &d in depths {
        let mut bed = CheckpointBed::new(dir.path(), d).unwrap();
        g.bench_function(BenchmarkId::new("checkpoint_after", d), |b| b.iter(|| bed.checkpoint().unwrap()));
    }
    g.finish();
}

fn group_commit(c: &mut Criterion) {
    let dir = base();
    let batches: &[usize] = if bench_mode() { &[1, 8, 32, 128] } else { &[1, 8] };
    let cfg = bench_config();
    let mut g = durable(c);
    for &n in batches {
        let r = Runner::open(fixture::fresh_root(dir.path(), "group"), "w1", cfg.clone()).unwrap();
        let hids = fixture::bulk_dispatch(&r, 0, n as u64).unwrap();
        for h in &hids {
            r.claim(h).unwrap();
        }
        let mut k = 0u64;
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function(BenchmarkId::new("checkpoint_many", n), |b| {
            b.iter(|| {
                k += 1;
                let items: Vec<Item> = hids
                    .iter()
                    .map(|h| Item {
                        hid: h.clone(),
                        holder: "w1".into(),
                        fence: 0.into(),
                        state: fixture::small_state(k),
                    })
                    .collect();
                for res in group::checkpoint_many(r.store().as_ref(), &cfg, &items).unwrap() {
                    res.unwrap();
                }
            })
        });
    }
    g.finish();
}

fn recover_race(c: &mut Criterion) {
    let dir = base();
    let mut g = durable(c);
    g.throughput(Throughput::Elements(1));
    g.bench_function("recover_race_8", |b| {
        b.iter_custom(|iters| {
            // recover_race reports races per second over `iters` races.
            let per_s = suite::recover_race(dir.path(), 8, iters as usize).unwrap();
            dhp_core::config::duration_from_secs("recover_race time", iters as f64 / per_s, f64::MAX).unwrap()
        })
    });
    g.finish();
}

fn ingest(c: &mut Criterion) {
    let dir = base();
    let lines = if bench_mode() { 10_000 } else { 200 };
    let log_path: PathBuf = dir.path().join("ingest.log");
    fixture::write_log(&log_path, lines).unwrap();
    let cfg = bench_config();
    let mut g = durable(c);
    g.throughput(Throughput::Elements(lines as u64));
    g.bench_function(BenchmarkId::new("ingest_lines", lines), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let root = fixture::fresh_root(dir.path(), "ingest");
                let store = SqliteStore::open(&root).unwrap();
                let t = Instant::now();
                let rep = log::ingest(&store, &log_path, &cfg).unwrap();
                total += t.elapsed();
                assert_eq!(rep.checkpoints_new, lines);
                drop(store);
                let _ = std::fs::remove_dir_all(&root);
            }
            total
        })
    });
    g.finish();
}

fn scan(c: &mut Criterion) {
    let dir = base();
    let n = if bench_mode() { 10_000 } else { 200 };
    let root = dir.path().join("scan");
    fixture::scan_store(&root, n).unwrap();
    let sup = Supervisor::open(&root, "bench-sup", bench_config()).unwrap();
    assert!(sup.scan().unwrap().is_empty());
    let mut g = durable(c);
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function(BenchmarkId::new("supervisor_scan", n), |b| b.iter(|| sup.scan().unwrap()));
    g.finish();
}

criterion_group!(benches, dispatch_claim, checkpoint_depth, group_commit, recover_race, ingest, scan);
criterion_main!(benches);
