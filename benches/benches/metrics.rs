//! What the always-on metrics cost (docs/observability.md): one relaxed
//! counter add and one histogram observation, uncontended and with two
//! threads adding to the same counter, beside a whole checkpoint on the
//! in-memory backend (the cheapest checkpoint there is, no fsync) that
//! includes its add (through the library's event hook, as the `dhp`
//! program counts). `cargo bench -p dhp-benches --bench metrics`.

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion};
use dhp_core::events::{Event, Hooks, Observer};
use dhp_core::metrics::{Counter, Histogram, LATENCY_BUCKETS};
use dhp_core::store::MemStore;
use dhp_core::{envelope, Config, Runner, TaskContext};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

static CHECKPOINTS: Counter = Counter::new();
static SCAN_DURATION: Histogram = Histogram::new(&LATENCY_BUCKETS);

/// What the `dhp` program's observer does on a checkpoint (its traces off).
struct Count;
impl Observer for Count {
    fn on(&self, e: &Event<'_>) {
        if let Event::Checkpointed { .. } = e {
            CHECKPOINTS.inc();
        }
    }
}

fn fresh(r: &Runner, n: u64) -> TaskContext {
    let env =
        envelope::build("bench.metrics", json!({"inline": {"n": n}}), json!({"type": "object"}), Default::default())
            .unwrap();
    let hid = r.dispatch(&env).unwrap();
    r.claim(&hid).unwrap()
}

fn metrics(c: &mut Criterion) {
    let mut g = c.benchmark_group("metrics");
    g.bench_function("counter_inc", |b| b.iter(|| black_box(&CHECKPOINTS).inc()));
    g.bench_function("histogram_observe", |b| b.iter(|| SCAN_DURATION.observe_secs(black_box(0.003))));
    // The same counter from a second thread at full speed: the cache line
    // bounces (the worst case; real checkpoints are microseconds apart).
    let stop = Arc::new(AtomicBool::new(false));
    let other = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                CHECKPOINTS.inc();
            }
        })
    };
    g.bench_function("counter_inc_contended", |b| b.iter(|| black_box(&CHECKPOINTS).inc()));
    stop.store(true, Ordering::Relaxed);
    let _ = other.join();
    let cfg = Config { lease_interval_s: 3600.0, hooks: Hooks::new(Arc::new(Count)), ..Config::default() };
    let state = json!({"chunk": 17, "found": 1234, "note": "a small checkpoint state"});
    // The in-memory backend copies its state per transaction: a fresh
    // store per checkpoint (set up outside the timing) keeps it at its
    // cheapest, so the add's share is at its largest.
    g.bench_function("checkpoint_mem", |b| {
        b.iter_batched(
            || fresh(&Runner::new(Arc::new(MemStore::new()), "w1", cfg.clone()).unwrap(), 0),
            |ctx| ctx.checkpoint(&state).unwrap(),
            BatchSize::SmallInput,
        )
    });
    // What a worker pays: a SQLite checkpoint (one commit, fsync).
    let dir = tempfile::tempdir().unwrap();
    let r = Runner::open(dir.path(), "w1", cfg.clone()).unwrap();
    let ctx = fresh(&r, 0);
    g.bench_function("checkpoint_sqlite", |b| b.iter(|| ctx.checkpoint(&state).unwrap()));
    g.finish();
}

criterion_group!(benches, metrics);
criterion_main!(benches);
