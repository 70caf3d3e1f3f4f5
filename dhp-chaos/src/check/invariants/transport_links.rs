//! What ingesting a transport log requires beyond each line's own hash,
//! checked by the judge from the spec (docs/PROTOCOL.md §8.1, §8.3 and
//! docs/log-chain.md) rather than by running an implementation's ingest:
//! one handoff per log, and the `hid`/`prev` binding dhp-rs writes on its
//! checkpoint lines (absent on the reference's lines, which is no fault).

use dhp_oracle as oracle;
use std::collections::HashMap;

/// Why `lines` (parsed by [`oracle::log::parse`]) would not ingest as
/// handoff `hid`, beyond the first header and the state hashes (which the
/// caller checks): one message per fault, empty when it would.
pub fn faults(lines: &[oracle::log::Line], hid: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut first_header = true;
    // seq → the state's computed hash, first copy
    let mut known: HashMap<u64, String> = HashMap::new();
    let mut links: Vec<(u64, String)> = Vec::new();
    for line in lines {
        match line {
            oracle::log::Line::Envelope(_) if first_header => first_header = false,
            oracle::log::Line::Envelope(e) => {
                let ok = e["handoff_id"].as_str() == Some(hid) && oracle::id_verifies(e);
                if !ok {
                    out.push(format!(
                        "a second header, of another handoff ({}) or one that does not verify: one log is one handoff's",
                        e["handoff_id"].as_str().map(crate::check::short).unwrap_or("none")
                    ));
                }
            }
            oracle::log::Line::Checkpoint(c) => {
                let seq = c.seq;
                let hash = oracle::state_hash(&c.state).unwrap_or_default();
                match c.record.get("hid") {
                    None => {}
                    Some(serde_json::Value::String(h)) if h == hid => {}
                    Some(serde_json::Value::String(h)) => {
                        out.push(format!("seq {seq} belongs to handoff {}", crate::check::short(h)))
                    }
                    Some(_) => out.push(format!("seq {seq}: hid is not a string")),
                }
                match c.record.get("prev") {
                    None => {}
                    Some(serde_json::Value::String(p)) if !is_hash(p) => {
                        out.push(format!("seq {seq}: prev is not a state hash"))
                    }
                    Some(serde_json::Value::String(_)) if seq == 0 => out.push("seq 0 names a predecessor".into()),
                    Some(serde_json::Value::String(p)) => links.push((seq, p.clone())),
                    Some(_) => out.push(format!("seq {seq}: prev is not a string")),
                }
                match known.get(&seq) {
                    Some(h) if *h != hash => out.push(format!("seq {seq} appears with two different states")),
                    Some(_) => {}
                    None => {
                        known.insert(seq, hash);
                    }
                }
            }
            oracle::log::Line::Skipped(_) => {}
        }
    }
    for (seq, prev) in links {
        if known.get(&(seq - 1)).is_some_and(|h| *h != prev) {
            out.push(format!("seq {seq} does not follow seq {} (prev is not its state hash)", seq - 1));
        }
    }
    out
}

/// 64 lowercase hex digits.
fn is_hash(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn hash(state: &Value) -> String {
        oracle::state_hash(state).unwrap()
    }

    /// A log of `states` as seq 0.., bound (`hid`, `prev`) as dhp-rs writes it.
    fn bound(hid: &str, states: &[Value]) -> Vec<Value> {
        states
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut r = json!({"type": "checkpoint", "seq": i, "state": s, "state_hash": hash(s), "hid": hid});
                if i > 0 {
                    r["prev"] = json!(hash(&states[i - 1]));
                }
                r
            })
            .collect()
    }

    fn parse(records: &[Value]) -> Vec<oracle::log::Line> {
        let header = json!({"type": "envelope", "envelope": {"handoff_id": "x"}});
        let text: String = std::iter::once(&header).chain(records).map(|r| format!("{r}\n")).collect();
        oracle::log::parse(text.as_bytes(), oracle::log::DEFAULT_MAX_LINE_BYTES)
    }

    fn ckpt_faults(records: &[Value], hid: &str) -> Vec<String> {
        faults(&parse(records), hid)
    }

    const H: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const OTHER: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    #[test]
    fn a_bound_chain_and_unbound_lines_ingest() {
        let states = [json!({"n": 0}), json!({"n": 1}), json!({"n": 2})];
        assert!(ckpt_faults(&bound(H, &states), H).is_empty());
        let mut unbound = bound(H, &states);
        for r in &mut unbound {
            r.as_object_mut().unwrap().retain(|k, _| k != "hid" && k != "prev");
        }
        // a duplicate with the same state is idempotent
        unbound.push(unbound[1].clone());
        assert!(ckpt_faults(&unbound, H).is_empty());
    }

    #[test]
    fn each_binding_fault_is_named() {
        let states = [json!({"n": 0}), json!({"n": 1}), json!({"n": 2})];
        let mut moved = bound(H, &states);
        moved[2]["prev"] = json!(hash(&json!({"n": 9})));
        assert!(ckpt_faults(&moved, H)[0].contains("seq 2 does not follow seq 1"));
        let mut foreign = bound(H, &states);
        foreign[1]["hid"] = json!(OTHER);
        assert!(ckpt_faults(&foreign, H)[0].contains("seq 1 belongs to handoff bbbbbbbb"));
        let mut zero = bound(H, &states);
        zero[0]["prev"] = json!(H);
        assert_eq!(ckpt_faults(&zero, H), ["seq 0 names a predecessor"]);
        let mut junk = bound(H, &states);
        junk[1]["prev"] = json!("not-a-hash");
        junk[2]["hid"] = json!(7);
        assert_eq!(ckpt_faults(&junk, H), ["seq 1: prev is not a state hash", "seq 2: hid is not a string"]);
        let mut twice = bound(H, &states);
        let s = json!({"n": 5});
        twice.push(json!({"type": "checkpoint", "seq": 1, "state": s, "state_hash": hash(&s)}));
        assert_eq!(ckpt_faults(&twice, H), ["seq 1 appears with two different states"]);
    }

    #[test]
    fn a_second_header_of_another_handoff_is_named() {
        // the first header is the caller's to check
        let lines = vec![
            oracle::log::Line::Envelope(json!({"handoff_id": H})),
            oracle::log::Line::Envelope(json!({"handoff_id": OTHER})),
        ];
        let f = faults(&lines, H);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].contains("of another handoff (bbbbbbbb"), "{f:?}");
    }
}
