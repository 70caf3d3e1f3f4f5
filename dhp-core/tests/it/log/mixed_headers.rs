//! A log is one handoff's (docs/PROTOCOL.md §8.1). One that carries a
//! second header, of another handoff, is refused as tampered and nothing
//! of it is stored: the reference instead switches to the second handoff
//! halfway through and ingests both (§8.3).

use crate::common;

use dhp_core::transport::log;
use dhp_core::{Config, Runner};
use serde_json::json;

#[test]
fn a_log_with_two_handoffs_headers_is_refused_and_stores_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = Config::default();
    let src = Runner::open(tmp.path().join("src"), "w", cfg.clone()).unwrap();
    let mut hids = Vec::new();
    for n in 0..2 {
        let env =
            dhp_core::envelope::build("t", json!({"n": n}), json!({"type": "object"}), Default::default()).unwrap();
        hids.push(src.dispatch(&env).unwrap());
    }
    let (a, b) = (tmp.path().join("a.log"), tmp.path().join("b.log"));
    log::ship_envelope(&a, &src.envelope(&hids[0]).unwrap(), &cfg).unwrap();
    log::ship_checkpoint(&a, 0, &json!({"i": 0}), &cfg).unwrap();
    log::ship_envelope(&b, &src.envelope(&hids[1]).unwrap(), &cfg).unwrap();
    log::ship_checkpoint(&b, 0, &json!({"i": 100}), &cfg).unwrap();
    let mixed = tmp.path().join("mixed.log");
    let mut bytes = std::fs::read(&a).unwrap();
    bytes.extend(std::fs::read(&b).unwrap());
    std::fs::write(&mixed, bytes).unwrap();

    let dst_root = tmp.path().join("dst");
    let dst = Runner::open(&dst_root, "r", cfg.clone()).unwrap();
    let before = common::dump(&dst_root);
    let err = log::ingest(dst.store().as_ref(), &mixed, &cfg).unwrap_err();
    assert_eq!(err.kind(), "TamperError", "{err}");
    assert!(err.to_string().contains("mixes handoffs"), "{err}");
    assert_eq!(common::dump(&dst_root), before, "a refused ingest must not change the store");

    // each log on its own is fine
    for (log_path, hid) in [(&a, &hids[0]), (&b, &hids[1])] {
        let rep = log::ingest(dst.store().as_ref(), log_path, &cfg).unwrap();
        assert_eq!(&rep.handoff_id, hid);
        assert_eq!(rep.checkpoints_ingested, 1);
    }
}
