//! Binding checkpoint lines to their handoff and to their predecessor
//! (`docs/log-chain.md`).
//!
//! A checkpoint line's own `state_hash` only proves that its state was not
//! changed; it says nothing about which handoff the line belongs to or
//! where in the history it sits. So our writers add two fields the
//! reference's readers ignore:
//!
//! - `hid`: the handoff id the line belongs to;
//! - `prev`: the `state_hash` of checkpoint `seq - 1` (absent for seq 0,
//!   and when the writer does not hold that checkpoint).
//!
//! Each `prev` names the hash of the state before it, and that state's line
//! names the one before that, so a verified run of lines is a hash chain
//! from seq 0. Readers verify the fields when present ([`claimed_prev`], [`verify_links`]); a line
//! without them (the reference's) is accepted as before. This guards
//! against mistakes (a line copied from another handoff's log, a relabelled
//! seq, two histories of one handoff mixed), not against a forger, who can
//! recompute any sha256.

use crate::error::{Error, Result};
use crate::json;
use crate::store::CheckpointRow;
use serde_json::{json, Value};
use std::collections::HashMap;

/// A checkpoint line bound to handoff `hid` and, when `prev` is given, to
/// checkpoint `seq - 1` whose state hash it is (no trailing newline).
pub fn bound_checkpoint_line(
    hid: &str,
    seq: i64,
    state: &Value,
    state_hash: &str,
    prev: Option<&str>,
    at: &str,
) -> Result<String> {
    let mut rec =
        json!({"type": "checkpoint", "hid": hid, "seq": seq, "state": state, "state_hash": state_hash, "at": at});
    if let (Some(p), Some(o)) = (prev, rec.as_object_mut()) {
        o.insert("prev".into(), json!(p));
    }
    json::dumps_sorted(&rec)
}

/// Makes the bound lines of one writer: remembers the last checkpoint it
/// wrote, so the next line can name it as `prev`.
#[derive(Debug, Clone)]
pub struct Chain {
    hid: String,
    last: Option<(i64, String)>,
}

impl Chain {
    /// A writer whose last checkpoint (seq, state_hash) is `last` (`None`
    /// before the first one). A recovering writer takes it from its store's
    /// last row.
    pub fn after(hid: &str, last: Option<(i64, String)>) -> Self {
        Chain { hid: hid.to_string(), last }
    }

    /// Note checkpoint `seq` as written without making its line (it is
    /// already at the destination).
    pub fn note(&mut self, seq: i64, state_hash: &str) {
        self.last = Some((seq, state_hash.to_string()));
    }

    /// The line for checkpoint `seq`; it carries `prev` only when the
    /// writer's last checkpoint is `seq - 1`.
    pub fn line(&mut self, seq: i64, state: &Value, state_hash: &str, at: &str) -> Result<String> {
        let prev = match &self.last {
            Some((s, h)) if s.checked_add(1) == Some(seq) => Some(h.as_str()),
            _ => None,
        };
        let line = bound_checkpoint_line(&self.hid, seq, state, state_hash, prev, at)?;
        self.last = Some((seq, state_hash.to_string()));
        Ok(line)
    }
}

impl Chain {
    /// The line of a committed checkpoint row, built from the row's stored
    /// state text, hash and `at` (nothing serialised or hashed again).
    /// Byte-identical to [`Chain::line`] of the parsed state: the stored
    /// text is `dumps_sorted` of the state, which is what the record's
    /// `dumps_sorted` writes for its `state` field.
    pub fn line_of_row(&mut self, row: &CheckpointRow) -> Result<String> {
        let prev = match &self.last {
            Some((s, h)) if s.checked_add(1) == Some(row.seq) => Some(h.as_str()),
            _ => None,
        };
        let text = |s: &str| json::dumps_sorted(&Value::String(s.to_string()));
        // Keys in sorted order, separators as json.dumps writes them.
        let mut line = format!("{{\"at\": {}, \"hid\": {}, ", text(&row.at)?, text(&self.hid)?);
        if let Some(p) = prev {
            line.push_str(&format!("\"prev\": {}, ", text(p)?));
        }
        line.push_str(&format!(
            "\"seq\": {}, \"state\": {}, \"state_hash\": {}, \"type\": \"checkpoint\"}}",
            row.seq,
            row.state_json,
            text(&row.state_hash)?
        ));
        self.last = Some((row.seq, row.state_hash.clone()));
        Ok(line)
    }
}

fn is_hash(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The binding a checkpoint record claims, checked against the handoff its
/// log (or connection) is for: `Ok(Some(prev))` when it names a
/// predecessor. A record of another handoff, or with malformed binding
/// fields, is [`Error::Tamper`].
pub fn claimed_prev<'a>(rec: &'a Value, hid: &str, seq: i64) -> Result<Option<&'a str>> {
    match rec.get("hid") {
        None => {}
        Some(Value::String(h)) if h == hid => {}
        Some(Value::String(h)) => {
            return Err(Error::tamper(format!(
                "checkpoint {seq} belongs to handoff {}, not {}",
                h.get(..12).unwrap_or(h),
                hid.get(..12).unwrap_or(hid)
            )))
        }
        Some(_) => return Err(Error::tamper(format!("checkpoint {seq}: hid is not a string"))),
    }
    match rec.get("prev") {
        None => Ok(None),
        Some(Value::String(p)) if !is_hash(p) => {
            Err(Error::tamper(format!("checkpoint {seq}: prev is not a state hash")))
        }
        Some(Value::String(_)) if seq == 0 => Err(Error::tamper("checkpoint 0 names a predecessor")),
        Some(Value::String(p)) => Ok(Some(p.as_str())),
        Some(_) => Err(Error::tamper(format!("checkpoint {seq}: prev is not a string"))),
    }
}

/// One verified checkpoint of a batch, as the binding check needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The checkpoint's sequence number.
    pub seq: i64,
    /// Its state hash (hex).
    pub state_hash: String,
    /// `prev`: the state hash of checkpoint `seq - 1`, if the line names it.
    pub prev: Option<String>,
}

/// Check a batch of checkpoint lines (in file order) against each other
/// and against what a store already holds (`stored`: seq → state_hash):
///
/// - one seq must not carry two different states (in the batch, or the
///   batch against the store): the first copy would silently win;
/// - a `prev` must equal the state hash of checkpoint `seq - 1` wherever
///   that is known (batch or store); where it is not (a gap), the link
///   cannot be checked and is accepted.
pub fn verify_links(links: &[Link], stored: &HashMap<i64, String>) -> Result<()> {
    let mut known: HashMap<i64, &str> = HashMap::with_capacity(links.len());
    for l in links {
        let have = known.get(&l.seq).copied().or_else(|| stored.get(&l.seq).map(String::as_str));
        match have {
            Some(h) if h != l.state_hash => {
                return Err(Error::tamper(format!(
                    "checkpoint {} appears with two different states (conflicting duplicate seq)",
                    l.seq
                )))
            }
            Some(_) => {}
            None => {
                known.insert(l.seq, &l.state_hash);
            }
        }
    }
    for l in links {
        let Some(prev) = &l.prev else { continue };
        let before = l.seq - 1;
        let have = known.get(&before).copied().or_else(|| stored.get(&before).map(String::as_str));
        if have.is_some_and(|h| h != prev) {
            return Err(Error::tamper(format!(
                "checkpoint {} does not follow checkpoint {before} (prev mismatch)",
                l.seq
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const A: &str = "1111111111111111111111111111111111111111111111111111111111111111";
    const B: &str = "2222222222222222222222222222222222222222222222222222222222222222";

    fn link(seq: i64, h: &str, prev: Option<&str>) -> Link {
        Link { seq, state_hash: h.into(), prev: prev.map(String::from) }
    }

    #[test]
    fn chain_names_only_the_immediate_predecessor() {
        let mut c = Chain::after(H, None);
        let l0: Value = serde_json::from_str(&c.line(0, &json!({}), A, "t").unwrap()).unwrap();
        assert!(l0.get("prev").is_none());
        assert_eq!(l0["hid"], H);
        let l1: Value = serde_json::from_str(&c.line(1, &json!({}), B, "t").unwrap()).unwrap();
        assert_eq!(l1["prev"], A);
        let l5: Value = serde_json::from_str(&c.line(5, &json!({}), A, "t").unwrap()).unwrap();
        assert!(l5.get("prev").is_none());
    }

    #[test]
    fn a_committed_row_makes_the_same_line_as_its_parsed_state() {
        let states = [
            json!({}),
            json!({"page": "Zürich \u{1f600}", "n": 2, "f": 1.5e-7, "g": 10.0, "q": "\"\\\n"}),
            json!({"z": [1, {"b": null, "a": true}], "a": {"y": [], "x": {}}, "big": 12345678901234567890u64}),
        ];
        let (mut by_state, mut by_row) = (Chain::after(H, None), Chain::after(H, None));
        for (seq, state) in [5, 6, 7].into_iter().zip(states) {
            let (text, hash) = json::state_text_and_hash(&state).unwrap();
            let at = "2026-11-30T10:00:00.123456+00:00";
            let row = CheckpointRow { seq, state_json: text, state_hash: hash.clone(), at: at.into() };
            let want = by_state.line(seq, &state, &hash, at).unwrap();
            assert_eq!(by_row.line_of_row(&row).unwrap(), want);
        }
    }

    #[test]
    fn links_check_duplicates_and_predecessors() {
        let none = HashMap::new();
        assert!(verify_links(&[link(0, A, None), link(1, B, Some(A)), link(1, B, Some(A))], &none).is_ok());
        assert!(verify_links(&[link(0, A, None), link(0, B, None)], &none).is_err());
        assert!(verify_links(&[link(1, B, Some(B)), link(0, A, None)], &none).is_err());
        // Unknown predecessor: accepted.
        assert!(verify_links(&[link(3, B, Some(B))], &none).is_ok());
        let stored: HashMap<i64, String> = [(0, A.to_string())].into();
        assert!(verify_links(&[link(0, B, None)], &stored).is_err());
        assert!(verify_links(&[link(1, B, Some(B))], &stored).is_err());
        assert!(verify_links(&[link(1, B, Some(A))], &stored).is_ok());
    }

    #[test]
    fn claims_are_checked() {
        assert_eq!(claimed_prev(&json!({}), H, 1).unwrap(), None);
        assert_eq!(claimed_prev(&json!({"hid": H, "prev": A}), H, 1).unwrap(), Some(A));
        assert!(claimed_prev(&json!({"hid": A}), H, 1).is_err());
        assert!(claimed_prev(&json!({"hid": 5}), H, 1).is_err());
        assert!(claimed_prev(&json!({"prev": A}), H, 0).is_err());
        assert!(claimed_prev(&json!({"prev": "x"}), H, 1).is_err());
        assert!(claimed_prev(&json!({"prev": null}), H, 1).is_err());
    }

    /// The census worker (`dhp work`, outside this library) checkpoints
    /// with `checkpoint_step` and ships `line_of_row` of the committed row:
    /// that path serialises and hashes each state once.
    #[test]
    fn a_checkpoint_and_its_shipped_line_hash_the_state_once() {
        let dir = tempfile::tempdir().unwrap();
        let r = crate::Runner::open(dir.path(), "w", crate::Config::default()).unwrap();
        let schema = json!({"type": "object"});
        let env = crate::envelope::build("t", json!({"inline": {"n": 1}}), schema, Default::default()).unwrap();
        let hid = r.dispatch(&env).unwrap();
        let ctx = r.claim(&hid).unwrap();
        let mut chain = Chain::after(&hid, None);
        let before = json::STATE_HASHES.with(|n| n.get());
        for n in 0..5 {
            let step = ctx.checkpoint_step(&json!({"next_n": n, "count": n * 2}), 1).unwrap();
            chain.line_of_row(&step.row).unwrap();
        }
        assert_eq!(json::STATE_HASHES.with(|n| n.get()) - before, 5, "one serialisation and hash per checkpoint");
    }
}
