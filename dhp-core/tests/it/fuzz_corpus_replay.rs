//! Replays the committed fuzz corpus (fuzz/corpus/<target>/: seeds made by
//! scripts/pyref/fuzz_seeds.py) and every minimised crash reproducer
//! (fuzz/regressions/<target>/) through the same entry points the fuzz
//! targets call (dhp_testkit::fuzzing), on the stable toolchain: a crash the
//! fuzzer once found stays fixed, and the seeds stay meaningful.

use std::path::{Path, PathBuf};

fn inputs(target: &str) -> Vec<PathBuf> {
    let fuzz = dhp_testkit::checkout().join("fuzz");
    let mut out = Vec::new();
    for dir in [fuzz.join("corpus").join(target), fuzz.join("regressions").join(target)] {
        if let Ok(rd) = std::fs::read_dir(&dir) {
            out.extend(rd.flatten().map(|e| e.path()).filter(|p| p.is_file()));
        }
    }
    out.sort();
    out
}

fn replay(target: &str, min: usize, f: fn(&[u8])) {
    let files = inputs(target);
    assert!(files.len() >= min, "{target}: only {} corpus files (seed with scripts/pyref/fuzz_seeds.py)", files.len());
    for p in &files {
        let data = std::fs::read(p).unwrap();
        if std::panic::catch_unwind(|| f(&data)).is_err() {
            panic!("{target}: {} crashes", p.strip_prefix(dhp_testkit::checkout()).unwrap_or(Path::new("?")).display());
        }
    }
}

#[test]
fn transport_log() {
    replay("transport_log", 20, dhp_testkit::fuzzing::transport_log);
}

#[test]
fn tcp_frames() {
    replay("tcp_frames", 10, dhp_testkit::fuzzing::tcp_frames);
}

#[test]
fn bundle() {
    replay("bundle", 4, dhp_testkit::fuzzing::bundle);
}

#[test]
fn envelope_dispatch() {
    replay("envelope_dispatch", 8, dhp_testkit::fuzzing::envelope_dispatch);
}

#[test]
fn env_config() {
    replay("env_config", 3, dhp_testkit::fuzzing::env_config);
}

#[test]
fn json_text() {
    replay("json_text", 60, dhp_testkit::fuzzing::json_text);
}
