//! Item 5 of the hardening issue: the disk under a `--ship` log fills and
//! the last line is torn (no newline). The recovering worker re-ships the
//! checkpoint the peer lacks; it used to land right after the fragment, in
//! the same unreadable line, so the peer copy had a gap. The file shipper
//! now ends a torn tail before appending: the fragment is one skipped line,
//! the re-shipped line is intact, and the log holds every checkpoint
//! (checked by our ingest and by the reference's).
use crate::tcp_support::*;
use dhp_core::{Config, Runner, Supervisor};
use std::time::Duration;

#[test]
fn recoverer_repairs_a_torn_ship_log() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let log = tmp.path().join("ship.log");
    let hid = census(&root, 0, 1000, 100);
    let ship = ["--ship", log.to_str().unwrap(), "--no-liveness"];
    let (code, out, err) = finish(
        spawn_work(&root, "w1", &hid, &[&ship[..], &["--stop-after", "4"]].concat(), &[]),
        Duration::from_secs(60),
    );
    assert_eq!(code, 3, "{out} {err}");
    assert_eq!(log_seqs(&log), vec![0, 1, 2, 3]);

    // The disk filled while checkpoint 3's line was written: half of it,
    // no newline.
    let text = std::fs::read_to_string(&log).unwrap();
    let start = text.trim_end().rfind('\n').unwrap() + 1;
    let torn = &text[..start + (text.len() - start) / 2];
    std::fs::write(&log, torn).unwrap();
    assert_eq!(log_seqs(&log), vec![0, 1, 2]);

    // The lease runs out, the supervisor orphans, w2 recovers: it re-ships
    // checkpoint 3, then goes on to the end.
    let r = Runner::open(&root, "test", Config::default()).unwrap();
    assert!(dhp_testkit::store::expire_lease(&r, &hid).unwrap());
    let sup = Supervisor::open(&root, "sup1", Config::default()).unwrap();
    assert!(sup.scan().unwrap().iter().any(|a| a.kind().as_str() == "orphaned"));
    let mut w2 = std::process::Command::new(dhp_bin());
    w2.args(["work", root.to_str().unwrap(), "--runner", "w2", "recover", &hid, "--json"])
        .args(ship)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let (code, out, err) = finish(w2.spawn().unwrap(), Duration::from_secs(60));
    assert_eq!((code, &out["completed"]), (0, &serde_json::json!(true)), "{out} {err}");

    // The fragment is its own line, everything after it is intact.
    let data = std::fs::read(&log).unwrap();
    assert!(data.starts_with(torn.as_bytes()) && data[torn.len()] == b'\n', "fragment must be ended, not appended to");
    assert_eq!(log_seqs(&log), (0..10).collect::<Vec<_>>());
    let rep = ingest_ours(&tmp.path().join("fresh"), &log);
    assert_eq!((rep["lines_skipped"].as_i64(), rep["gaps"].as_array().map(Vec::len)), (Some(1), Some(0)), "{rep}");
    assert_eq!(store_rows(&tmp.path().join("fresh"), &hid), store_rows(&root, &hid));
    let py = tmp.path().join("py");
    let rep = refctl_ok(&["ingest", py.to_str().unwrap(), log.to_str().unwrap()], &[]);
    assert_eq!((rep["checkpoints_ingested"].as_i64(), rep["lines_skipped"].as_i64()), (Some(10), Some(1)), "{rep}");
}
