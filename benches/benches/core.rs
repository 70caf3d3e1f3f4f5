//! CPU-only paths: envelope build + id, canonical hashing, checkpoint-state hashing.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use dhp_benches::fixture;
use dhp_core::{envelope, json};

fn envelope_build(c: &mut Criterion) {
    let mut g = c.benchmark_group("envelope");
    g.throughput(Throughput::Elements(1));
    let mut i = 0u64;
    g.bench_function("build_sdk_with_id", |b| {
        b.iter(|| {
            i += 1;
            black_box(fixture::sdk_envelope(i).unwrap())
        })
    });
    let env = fixture::sdk_envelope(7).unwrap();
    g.bench_function("handoff_id", |b| b.iter(|| black_box(envelope::handoff_id(black_box(&env)).unwrap())));
    g.bench_function("verify", |b| b.iter(|| black_box(envelope::verify(black_box(&env)).unwrap())));
    g.finish();
}

fn hashing(c: &mut Criterion) {
    let mut g = c.benchmark_group("hash");
    for (label, bytes) in [("1KB", 1_000usize), ("100KB", 100_000)] {
        let st = fixture::state_of_size(bytes);
        let len = json::canonical(&st).unwrap().len();
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_with_input(BenchmarkId::new("canonical_sha256", label), &st, |b, st| {
            b.iter(|| black_box(json::sha256_hex(&json::canonical(black_box(st)).unwrap())))
        });
        g.bench_with_input(BenchmarkId::new("state_text_and_hash", label), &st, |b, st| {
            b.iter(|| black_box(json::state_text_and_hash(black_box(st)).unwrap()))
        });
    }
    g.finish();
}

criterion_group!(benches, envelope_build, hashing);
criterion_main!(benches);
