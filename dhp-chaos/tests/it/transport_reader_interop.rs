//! The checker's transport-log reader (dhp-oracle's parser and the
//! ingestability check of `transport`, `check::transport_log_faults`) on
//! logs written by the two implementations, run as processes: `dhp work
//! --ship` (bound lines, docs/log-chain.md) and the reference's
//! `transport.ship_envelope`/`ship_checkpoint` (unbound lines). Both read
//! whole and clean; each kind of damage to them is named.
use crate::common::*;
use dhp_chaos::check::transport_log_faults;
use dhp_oracle as oracle;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

fn ok(o: std::process::Output, what: &str) -> String {
    assert!(o.status.success(), "{what}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// A census over [10, 50) by 10 worked to the end by `dhp work --ship`:
/// (hid, the log's bytes).
fn ours(dir: &Path) -> (String, Vec<u8>) {
    let store = dir.join("store");
    let s = store.to_str().unwrap();
    let out = ok(
        Command::new(dhp_bin()).args(["--json", "dispatch", "--create", s, "--census", "10,50,10"]).output().unwrap(),
        "dhp dispatch",
    );
    let hid = serde_json::from_str::<Value>(&out).unwrap()["hid"].as_str().unwrap().to_string();
    let log = dir.join(format!("{hid}.log"));
    ok(
        Command::new(dhp_bin())
            .args(["work", s, "--runner", "w1", "claim", &hid, "--pace", "0", "--ship"])
            .arg(&log)
            .output()
            .unwrap(),
        "dhp work --ship",
    );
    (hid, std::fs::read(&log).unwrap())
}

/// The same census's log as the reference ships it: (hid, bytes).
fn reference(dir: &Path) -> (String, Vec<u8>) {
    let script = r#"
import json, sys
from dhp import envelope as E, transport as T
env = E.build("prime.census", {"inline": {"lo": 10, "hi": 50, "chunk": 10}}, {"type": "object"})
path = sys.argv[1] + "/" + env["handoff_id"] + ".log"
T.ship_envelope(path, env)
for i in range(4):
    T.ship_checkpoint(path, i, {"next_n": 20 + 10 * i, "count": i, "total": i * i})
print(env["handoff_id"])
"#;
    let hid = ok(Command::new(python()).arg("-c").arg(script).arg(dir).output().unwrap(), "the reference's shipper");
    let hid = hid.trim().to_string();
    let bytes = std::fs::read(dir.join(format!("{hid}.log"))).unwrap();
    (hid, bytes)
}

/// Every line read, the header verifies as `hid`, every state hash holds,
/// seqs 0..n in order, no ingest fault; the checkpoint records.
fn clean(hid: &str, bytes: &[u8], n: u64) -> Vec<Value> {
    let lines = oracle::log::parse(bytes, oracle::log::DEFAULT_MAX_LINE_BYTES);
    let mut records = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        match l {
            oracle::log::Line::Envelope(e) => {
                assert!(i == 0 && e["handoff_id"] == hid && oracle::id_verifies(e), "header {e:#}")
            }
            oracle::log::Line::Checkpoint(c) => {
                assert_eq!(c.seq, i as u64 - 1);
                assert_eq!(c.state_hash.as_deref(), Some(oracle::state_hash(&c.state).unwrap().as_str()));
                records.push(c.record.clone());
            }
            oracle::log::Line::Skipped(why) => panic!("line {i} skipped: {why}"),
        }
    }
    assert_eq!(records.len() as u64, n);
    assert_eq!(transport_log_faults(&lines, hid), Vec::<String>::new());
    records
}

fn faults_of(bytes: &[u8], extra: &[Value], hid: &str) -> Vec<String> {
    let mut b = bytes.to_vec();
    for r in extra {
        b.extend_from_slice(format!("{r}\n").as_bytes());
    }
    transport_log_faults(&oracle::log::parse(&b, oracle::log::DEFAULT_MAX_LINE_BYTES), hid)
}

#[test]
fn logs_of_dhp_and_of_the_reference_read_clean_and_damage_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let (our_hid, our_log) = ours(tmp.path());
    let (ref_hid, ref_log) = reference(tmp.path());
    assert_ne!(our_hid, ref_hid);

    // ours: bound lines (hid, prev)
    let recs = clean(&our_hid, &our_log, 4);
    assert!(recs.iter().all(|r| r["hid"] == our_hid.as_str()), "{recs:#?}");
    assert!(recs[1..].iter().all(|r| r["prev"].is_string()) && recs[0].get("prev").is_none(), "{recs:#?}");
    // the reference's: unbound, still clean
    let refs = clean(&ref_hid, &ref_log, 4);
    assert!(refs.iter().all(|r| r.get("hid").is_none() && r.get("prev").is_none()), "{refs:#?}");

    // a line of our log pasted into the reference's: another handoff's
    let f = faults_of(&ref_log, &[recs[3].clone()], &ref_hid);
    assert!(f.iter().any(|m| m.contains("belongs to handoff")), "{f:?}");
    // our seq 3 relinked to a state seq 2 never had
    let mut moved = recs[3].clone();
    moved["prev"] = json!(oracle::state_hash(&json!({"forged": 1})).unwrap());
    let f = faults_of(&our_log, &[moved], &our_hid);
    assert!(f.iter().any(|m| m.contains("seq 3 does not follow seq 2")), "{f:?}");
    // a reference seq shipped again with another state
    let state = json!({"next_n": 99, "count": 0, "total": 0});
    let again =
        json!({"type": "checkpoint", "seq": 2, "state": state, "state_hash": oracle::state_hash(&state).unwrap()});
    let f = faults_of(&ref_log, &[again], &ref_hid);
    assert_eq!(f, ["seq 2 appears with two different states"]);
    // the reference's header appended to our log
    let header: Value = serde_json::from_slice(ref_log.split(|b| *b == b'\n').next().unwrap()).unwrap();
    let f = faults_of(&our_log, &[header], &our_hid);
    assert!(f.iter().any(|m| m.contains("a second header")), "{f:?}");
}
