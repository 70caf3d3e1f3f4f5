//! The disk fills while the `--ship` log's envelope header is written: the
//! file holds only a fragment of it. A shipper used to see a non-empty
//! file, skip the header ("first writer wins") and append checkpoints that
//! no ingest could use (no header). Now a log without a complete first
//! line gets the header after the ended fragment, and ingests whole.
use crate::tcp_support::*;
use std::time::Duration;

#[test]
fn a_torn_header_is_written_again() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let log = tmp.path().join("ship.log");
    let hid = census(&root, 0, 500, 100);
    std::fs::write(&log, br#"{"envelope": {"contract": {"acceptance": [], "bud"#).unwrap();
    let (code, out, err) = finish(
        spawn_work(&root, "w1", &hid, &["--ship", log.to_str().unwrap(), "--no-liveness"], &[]),
        Duration::from_secs(60),
    );
    assert_eq!(code, 0, "{out} {err}");
    let rep = ingest_ours(&tmp.path().join("fresh"), &log);
    assert_eq!((rep["lines_skipped"].as_i64(), rep["checkpoints_new"].as_i64()), (Some(1), Some(5)), "{rep}");
    assert_eq!(store_rows(&tmp.path().join("fresh"), &hid), store_rows(&root, &hid));
}
