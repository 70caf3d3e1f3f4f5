//! A worker SIGKILLed inside its checkpoint transaction (after the row was
//! inserted, before COMMIT) leaves nothing of that transaction in a
//! PostgreSQL store: the server rolls it back when the connection drops.
use crate::pg_support;

use crate::common::*;
use dhp_core::{Config, Runner};
use std::process::Command;

#[test]
fn kill_inside_the_checkpoint_transaction_leaves_nothing() {
    let url = pg_support::fresh_url("midtx");
    let (code, v, err) = dhp(&["dispatch", &url, "--census", "1000,5000,100"], &[]);
    assert_eq!(code, 0, "{err}");
    let hid = v["hid"].as_str().unwrap().to_string();
    // The 5th checkpoint's transaction dies after its INSERT.
    let out = Command::new(dhp_bin())
        .args(["work", &url, "--runner", "w1", "claim", &hid])
        .env("DHP_FAILPOINTS", "checkpoint.in_tx=kill@5")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), None, "killed by a signal: {out:?}");
    let r = Runner::open(&url, "observer", Config::default()).unwrap();
    let rows = r.checkpoints(&hid).unwrap();
    assert_eq!(rows.iter().map(|c| c.seq).collect::<Vec<_>>(), vec![0, 1, 2, 3], "the 5th checkpoint was rolled back");
    let st = r.status(&hid).unwrap();
    assert_eq!((st["status"].as_str(), st["steps"].as_i64()), (Some("running"), Some(4)), "{st}");
    let last = r.last_checkpoint(&hid).unwrap().unwrap();
    assert_eq!(last["next_n"], 1400, "{last}");
}
