//! transport after a host death, on a synthetic round: this host committed
//! seq 3 but had not shipped it when it died; the standby ingested seqs
//! 0..=2 from the peer's log and redid chunk 3 there, with its own state.
//! That line is the standby's (checked in its round), not a difference from
//! this host's store — the hosts_death test failed under load on exactly
//! this (`[peer] transport seq 15 differs from the store's seq 15`, the
//! checker blamed the standby's redo on the dead host). A line below what
//! the standby ingested that differs is still a violation.
use crate::common::synth::*;
use serde_json::json;

const INV: &str = "transport";

/// w1 checkpoints four chunks and ships three; the standby's seq 3 (a
/// different state) is in the log; `ingested`: the standby's count, if recorded.
fn died_before_shipping(ingested: Option<u64>) -> Vec<String> {
    let mut s = Synth::new();
    let c1 = s.claimed_by("w1", "builtin");
    s.work("w1", &c1, LO, LO + 300);
    let st = Synth::state(LO + 400);
    s.checkpoint_line("w1", "invoke", c1.fence().get(), LO + 400, json!({}));
    let seq = c1.checkpoint(&st).unwrap();
    s.checkpoint_line("w1", "ok", c1.fence().get(), LO + 400, json!({"seq": seq}));
    assert_eq!(seq, 3);
    let mut redo = st.clone();
    redo["redone_by"] = json!("the standby");
    s.ship(3, &redo);
    let p = s.dir.join("round.json");
    let mut meta: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    let mut death = json!({"t": 0.0, "fault_id": 1, "standby": "../h1s", "moved": [s.hid], "lost": []});
    if let Some(n) = ingested {
        death["ingested"] = json!({s.hid.clone(): n});
    }
    meta["host_death"] = death;
    std::fs::write(&p, serde_json::to_vec(&meta).unwrap()).unwrap();
    violations(&s.check(), INV)
}

#[test]
fn the_standbys_redo_of_an_unshipped_seq_is_not_this_hosts_difference() {
    let v = died_before_shipping(Some(3));
    assert!(v.is_empty(), "{v:#?}");
}

#[test]
fn a_differing_seq_the_standby_ingested_is_still_a_violation() {
    // the standby says it ingested seq 3 from here: then the peer's seq 3 was this host's
    let v = died_before_shipping(Some(4));
    assert_eq!(v.len(), 1, "{v:#?}");
    assert!(v[0].contains("transport seq 3 differs from the store's seq 3"), "{v:#?}");
    // a run recorded before the count was: not excused either
    let v = died_before_shipping(None);
    assert_eq!(v.len(), 1, "{v:#?}");
}
