//! The `dhp` commands on a PostgreSQL ROOT, and handoffs moving between a
//! PostgreSQL store and a directory store: a bundle suspended from one is
//! resumed on the other, a transport log shipped from one is ingested
//! into the other, and both finish with the same result.
use crate::pg_support;

use crate::common::dhp;

fn ok(args: &[&str]) -> serde_json::Value {
    let (code, v, err) = dhp(args, &[]);
    assert_eq!(code, 0, "dhp {args:?}: {err}");
    v
}

#[test]
fn commands_and_moves_between_postgres_and_sqlite() {
    let url = pg_support::fresh_url("cli");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let root = root.to_str().unwrap();

    // Dispatch, work, status, ack on PostgreSQL.
    let hid = ok(&["dispatch", &url, "--census", "0,20000,1000"])["hid"].as_str().unwrap().to_string();
    let done = ok(&["work", &url, "--runner", "w1", "claim", &hid]);
    ok(&["ack", &url, &hid]);
    let st = ok(&["status", &url, &hid]);
    assert_eq!(
        (st["status"].as_str(), st["acked"].as_bool(), st["checkpoints"].as_i64()),
        (Some("completed"), Some(true), Some(20)),
        "{st}"
    );
    assert_eq!(ok(&["status", &url])["handoffs"].as_array().unwrap().len(), 1);

    // PostgreSQL → bundle → SQLite.
    let h2 = ok(&["dispatch", &url, "--census", "0,20000,1000", "--created-by", "second"])["hid"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, _, err) = dhp(&["work", &url, "--runner", "w2", "claim", &h2, "--stop-after", "5"], &[]);
    assert_eq!(code, 3, "{err}");
    let bundle = dir.path().join("h2.bundle");
    ok(&["suspend", &url, &h2, "--out", bundle.to_str().unwrap()]);
    assert_eq!(ok(&["resume", "--create", root, bundle.to_str().unwrap()])["hid"], h2.as_str());
    let moved = ok(&["work", root, "--runner", "w3", "claim", &h2]);
    assert_eq!(moved["resumed_from"], 5000, "{moved}");
    assert_eq!(moved["prime_count"], done["prime_count"]);

    // SQLite → transport log → ingest into PostgreSQL.
    let h3 = ok(&["dispatch", root, "--census", "0,20000,1000", "--created-by", "third"])["hid"]
        .as_str()
        .unwrap()
        .to_string();
    let log = dir.path().join("h3.log");
    let (code, _, err) =
        dhp(&["work", root, "--runner", "w4", "claim", &h3, "--stop-after", "7", "--ship", log.to_str().unwrap()], &[]);
    assert_eq!(code, 3, "{err}");
    let rep = ok(&["ingest", &url, log.to_str().unwrap()]);
    assert_eq!(rep["reports"][0]["checkpoints_new"], 7, "{rep}");
    let fin = ok(&["work", &url, "--runner", "w5", "claim", &h3]);
    assert_eq!((fin["resumed_from"].as_i64(), &fin["prime_count"]), (Some(7000), &done["prime_count"]), "{fin}");
}
