//! A duplicate seq whose state differs from the row a store already holds
//! used to be ignored silently (INSERT OR IGNORE: first wins, and which
//! copy is first depends on the order logs arrive). Ingest now refuses it
//! as tampered, never overwrites, and the store stays byte-for-byte
//! unchanged. The line is a plain reference-style line (no binding
//! fields): the check does not depend on them.

use crate::common;

use dhp_core::transport::log;
use dhp_core::{Config, Runner};
use serde_json::json;

#[test]
fn a_conflicting_duplicate_seq_is_refused_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = Config::default();
    let src = Runner::open(tmp.path().join("src"), "w", cfg.clone()).unwrap();
    let env = dhp_core::envelope::build("t", json!({"n": 1}), json!({"type": "object"}), Default::default()).unwrap();
    let hid = src.dispatch(&env).unwrap();
    let good = tmp.path().join("good.log");
    log::ship_envelope(&good, &src.envelope(&hid).unwrap(), &cfg).unwrap();
    for i in 0..3 {
        log::ship_checkpoint(&good, i, &json!({"i": i}), &cfg).unwrap();
    }
    let dst_root = tmp.path().join("dst");
    let dst = Runner::open(&dst_root, "r", cfg.clone()).unwrap();
    log::ingest(dst.store().as_ref(), &good, &cfg).unwrap();
    let before = common::dump(&dst_root);

    // Another copy of seq 1 with a different (self-consistent) state.
    let other = tmp.path().join("other.log");
    log::ship_envelope(&other, &src.envelope(&hid).unwrap(), &cfg).unwrap();
    log::ship_checkpoint(&other, 3, &json!({"i": 3}), &cfg).unwrap();
    log::ship_checkpoint(&other, 1, &json!({"i": 100}), &cfg).unwrap();
    let err = log::ingest(dst.store().as_ref(), &other, &cfg).unwrap_err();
    assert_eq!(err.kind(), "TamperError", "{err}");
    assert!(err.to_string().contains("conflicting duplicate seq"), "{err}");
    assert_eq!(common::dump(&dst_root), before, "a refused ingest must not change the store (not even seq 3)");

    // Within one log, two copies of one seq with different states: refused
    // on a fresh store too, whichever comes first.
    let fresh_root = tmp.path().join("fresh");
    let fresh = Runner::open(&fresh_root, "f", cfg.clone()).unwrap();
    let mut both = std::fs::read(&good).unwrap();
    both.extend_from_slice(
        &std::fs::read(&other).unwrap()[std::fs::read_to_string(&other).unwrap().find('\n').unwrap() + 1..],
    );
    let mixed = tmp.path().join("mixed.log");
    std::fs::write(&mixed, &both).unwrap();
    let err = log::ingest(fresh.store().as_ref(), &mixed, &cfg).unwrap_err();
    assert_eq!(err.kind(), "TamperError", "{err}");
    assert!(fresh.all_hids().unwrap().is_empty());

    // Same seq, same state, twice: still an idempotent duplicate.
    let mut twice = std::fs::read(&good).unwrap();
    twice.extend_from_slice(std::fs::read_to_string(&good).unwrap().lines().nth(2).unwrap().as_bytes());
    twice.push(b'\n');
    std::fs::write(&mixed, &twice).unwrap();
    let rep = log::ingest(fresh.store().as_ref(), &mixed, &cfg).unwrap();
    assert_eq!((rep.checkpoints_ingested, rep.checkpoints_new), (4, 3));
}
