//! A refused checkpoint (with or without counted steps) or heartbeat is
//! the same typed error, with the same message, on SQLite (client-side
//! transaction) and on PostgreSQL (server-side functions): wrong fence,
//! another holder, no ownership, expired lease, a handoff no longer
//! running, the checkpoint cap. Nothing of a refused write is stored, and
//! accepted ones leave the same rows, steps and budget verdicts.

use crate::pg_support;

use dhp_core::store::{self, Backend, StoreLocation};
use dhp_core::{Config, Error, Lease, Runner};
use dhp_testkit::store as testing;
use serde_json::json;
use std::sync::Arc;

/// Error messages with the seconds of a lost lease blanked (they differ).
fn msg(e: Error) -> String {
    match e {
        Error::LeaseLost { hid, .. } => format!("LeaseLost {hid}"),
        e => format!("{} {e}", e.kind()),
    }
}

fn refusals(store: Arc<dyn Backend>) -> Vec<String> {
    let cfg = Config { max_checkpoints_per_handoff: 2, ..Config::default() };
    let w1 = Runner::new(store.clone(), "w1", cfg.clone()).unwrap();
    let w2 = w1.with_id("w2").unwrap();
    let budget = json!({"max_steps": 5, "max_attempts": 2});
    let opts = dhp_core::envelope::BuildOptions { budget: Some(budget), ..Default::default() };
    let env = dhp_core::envelope::build("t", json!({"n": 1}), json!({}), opts).unwrap();
    let hid = w1.dispatch(&env).unwrap();
    let missing = "0".repeat(64);
    let mut out = Vec::new();
    // Before the claim: no ownership row.
    out.push(msg(w1.checkpoint(&Lease::presented(&hid, 0).unwrap(), &json!({})).unwrap_err()));
    out.push(msg(w1.heartbeat(&Lease::presented(&hid, 0).unwrap()).unwrap_err()));
    w1.claim(&hid).unwrap();
    out.push(msg(w1.checkpoint(&Lease::presented(&hid, 1).unwrap(), &json!({})).unwrap_err()));
    out.push(msg(w1.checkpoint_step(&Lease::presented(&hid, 1).unwrap(), &json!({}), 2).unwrap_err()));
    out.push(msg(w2.checkpoint(&Lease::presented(&hid, 0).unwrap(), &json!({})).unwrap_err()));
    out.push(msg(w2.checkpoint_step(&Lease::presented(&hid, 0).unwrap(), &json!({}), 1).unwrap_err()));
    out.push(msg(w2.heartbeat(&Lease::presented(&hid, 0).unwrap()).unwrap_err()));
    out.push(msg(w1.checkpoint(&Lease::presented(&missing, 0).unwrap(), &json!({})).unwrap_err()));
    out.push(msg(w1.heartbeat(&Lease::presented(&missing, 0).unwrap()).unwrap_err()));
    // The cap: two checkpoints (the second counts 7 steps, over the
    // budget of 5: committed, and flagged), then Oversize.
    out.push(format!("seq {}", w1.checkpoint(&Lease::presented(&hid, 0).unwrap(), &json!({"i": 0})).unwrap()));
    let before = w1.ownership(&hid).unwrap().unwrap().lease_expires_at;
    let step = w1.checkpoint_step(&Lease::presented(&hid, 0).unwrap(), &json!({"i": 1}), 7).unwrap();
    out.push(format!("seq {} over budget {:?}", step.seq(), step.over_budget));
    let after = w1.ownership(&hid).unwrap().unwrap().lease_expires_at;
    out.push(format!("lease extended {}", after > before));
    out.push(format!("steps {}", w1.status(&hid).unwrap()["steps"]));
    out.push(msg(w1.checkpoint(&Lease::presented(&hid, 0).unwrap(), &json!({"i": 2})).unwrap_err()));
    out.push(msg(w1.checkpoint_step(&Lease::presented(&hid, 0).unwrap(), &json!({"i": 2}), 1).unwrap_err()));
    // An expired lease.
    testing::expire_lease(&w1, &hid).unwrap();
    out.push(msg(w1.checkpoint(&Lease::presented(&hid, 0).unwrap(), &json!({})).unwrap_err()));
    out.push(msg(w1.checkpoint_step(&Lease::presented(&hid, 0).unwrap(), &json!({}), 1).unwrap_err()));
    out.push(msg(w1.heartbeat(&Lease::presented(&hid, 0).unwrap()).unwrap_err()));
    // Not running: a second handoff, claimed, then suspended.
    let env2 = dhp_core::envelope::build("t", json!({"n": 2}), json!({}), Default::default()).unwrap();
    let hid2 = w1.dispatch(&env2).unwrap();
    w1.claim(&hid2).unwrap();
    let left = w1.heartbeat(&Lease::presented(&hid2, 0).unwrap()).unwrap();
    out.push(format!("heartbeat ok {}", left > 0.0));
    w1.suspend(&hid2).unwrap();
    out.push(msg(w1.checkpoint(&Lease::presented(&hid2, 0).unwrap(), &json!({})).unwrap_err()));
    out.push(msg(w1.checkpoint_step(&Lease::presented(&hid2, 0).unwrap(), &json!({}), 1).unwrap_err()));
    out.push(msg(w1.heartbeat(&Lease::presented(&hid2, 0).unwrap()).unwrap_err()));
    // Nothing of the refusals was stored.
    out.push(format!("rows {} {}", w1.checkpoints(&hid).unwrap().len(), w1.checkpoints(&hid2).unwrap().len()));
    // Hids differ between runs (envelopes carry their creation time).
    out.iter().map(|m| m.replace(&hid, "H1").replace(&hid[..12], "H1").replace(&hid2[..12], "H2")).collect()
}

#[test]
fn refusals_are_identical_on_sqlite_and_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = refusals(store::open(&StoreLocation::Dir(dir.path().to_path_buf())).unwrap());
    let url = pg_support::fresh_url("onetrip_refusals");
    let pg = refusals(store::open(&StoreLocation::parse(&url).unwrap()).unwrap());
    assert_eq!(sqlite, pg);
    assert!(sqlite.iter().any(|m| m.starts_with("LeaseLost")), "{sqlite:?}");
    assert!(sqlite.iter().any(|m| m.contains("not running (status=suspended)")), "{sqlite:?}");
    assert_eq!(sqlite.last().map(String::as_str), Some("rows 2 0"));
}
