//! The store as the audit shows it: the last row of every audited table,
//! and the model [`State`] read from those rows.

use std::collections::BTreeMap;

use serde_json::Value;

use super::types::Params;
use crate::state::{Budget, Handoff, Leadership, Ownership, State, Status, Time, ORPHANED};

/// The judge's [`Time`] unit: microseconds (milliseconds rounded a lease
/// that ran out 0.1 ms before an orphan into one that had not).
pub(crate) const UNITS_PER_S: f64 = 1e6;

/// Epoch seconds to the judge's [`Time`], clamped inside `i64` with room
/// for a sum of two, so that a hostile row (a lease in the year 10^9, a TTL
/// of 1e300) cannot overflow the model's arithmetic; NaN is 0.
pub(crate) fn tm(at: f64) -> Time {
    (at * UNITS_PER_S).round().clamp(-4e18, 4e18) as Time
}

/// The audited rows as they are after the changes fed so far.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rows {
    pub handoffs: BTreeMap<String, Value>,
    pub ownership: BTreeMap<String, Value>,
    /// Last checkpoint seq per hid.
    pub last_seq: BTreeMap<String, i64>,
    pub leadership: Option<Value>,
}

/// One hid's two rows that say who owns it: the envelope projection and the ownership row.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Pair {
    pub handoff: Option<Value>,
    pub own: Option<Value>,
}

pub(crate) fn s<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k)?.as_str()
}
pub(crate) fn f(v: &Value, k: &str) -> Option<f64> {
    v.get(k)?.as_f64()
}
pub(crate) fn i(v: &Value, k: &str) -> Option<i64> {
    v.get(k)?.as_i64()
}
/// `execution.k` of a handoffs projection.
pub(crate) fn ex<'a>(v: &'a Value, k: &str) -> Option<&'a Value> {
    v.get("execution")?.get(k)
}

impl Pair {
    pub fn status(&self) -> Option<Status> {
        self.handoff.as_ref().and_then(|h| s(h, "status")?.parse().ok())
    }
    pub fn holder(&self) -> Option<&str> {
        self.own.as_ref().and_then(|o| s(o, "holder"))
    }
    pub fn fence(&self) -> Option<i64> {
        self.own.as_ref().and_then(|o| i(o, "fence"))
    }
    pub fn lease(&self) -> Option<f64> {
        self.own.as_ref().and_then(|o| f(o, "lease_expires_at"))
    }
    pub fn tomb(&self) -> bool {
        self.holder() == Some(ORPHANED)
    }
    pub fn attempt(&self) -> i64 {
        self.handoff.as_ref().and_then(|h| ex(h, "attempt")?.as_i64()).unwrap_or(0)
    }
    pub fn exec_s(&self, k: &str) -> Option<&str> {
        self.handoff.as_ref().and_then(|h| ex(h, k)?.as_str())
    }

    /// docs/torn-states.md's "consistent" cells: the status agrees with
    /// the ownership row. A change that leaves a pair inconsistent is the
    /// first half of a two-row operation (or a torn write).
    pub fn consistent(&self) -> bool {
        match (self.status(), self.own.is_some(), self.tomb()) {
            // An ownership row of a handoff not seen yet: wait for its row.
            (None, own, _) => !own,
            (Some(Status::Pending | Status::Completed), own, _) => !own,
            (Some(Status::Running), own, tomb) => own && !tomb,
            (Some(Status::Orphaned), _, tomb) => tomb,
            (Some(Status::Failed), own, tomb) => !own || tomb,
            (Some(Status::Suspended), _, _) => true,
        }
    }

    /// The model's view of this pair, for the model's operations.
    pub fn model(&self, hid: &str, rows: &Rows, p: &Params) -> State {
        let mut st = State::default();
        if let Some(h) = &self.handoff {
            st.handoffs.insert(hid.to_string(), handoff(h, p));
        }
        if let Some(o) = &self.own {
            let ttl = f(o, "heartbeat_interval_s").unwrap_or(2.0) * f(o, "max_missed").unwrap_or(3.0);
            let own = Ownership {
                holder: s(o, "holder").unwrap_or_default().to_string(),
                fence: i(o, "fence").unwrap_or(0),
                lease_expires_at: tm(f(o, "lease_expires_at").unwrap_or(0.0)),
                ttl: tm(ttl),
            };
            st.ownership.insert(hid.to_string(), own);
        }
        st.leadership = rows.leadership.as_ref().map(|l| Leadership {
            holder: s(l, "holder").unwrap_or_default().to_string(),
            expires_at: tm(f(l, "expires_at").unwrap_or(0.0)),
        });
        st
    }
}

/// A handoffs projection as the model's [`Handoff`].
fn handoff(h: &Value, p: &Params) -> Handoff {
    let b = h.get("budget").cloned().unwrap_or(Value::Null);
    let budget = Budget {
        max_steps: i(&b, "max_steps"),
        max_spend_micro: f(&b, "max_spend_usd").map(|x| (x * 1e6).round() as i64),
        max_wall: f(&b, "max_wallclock_s").map(tm),
        max_attempts: i(&b, "max_attempts").map_or(p.default_max_attempts, |x| x.max(0) as u32),
        max_stall_retries: h.pointer("/execution/max_stall_retries").and_then(Value::as_u64).unwrap_or(2) as u32,
    };
    let mut out = Handoff::pending(budget);
    out.status = s(h, "status").and_then(|x| x.parse().ok()).unwrap_or(Status::Pending);
    let e = |k| ex(h, k);
    out.attempt = e("attempt").and_then(Value::as_u64).unwrap_or(0) as u32;
    out.steps = e("steps").and_then(Value::as_i64).unwrap_or(0);
    out.spend_micro = e("spend_usd").and_then(Value::as_f64).map_or(0, |x| (x * 1e6).round() as i64);
    out.fence = e("fence").and_then(Value::as_i64).unwrap_or(0);
    out.claimed_at = e("claimed_at").and_then(Value::as_f64).map(tm);
    out.runner = e("runner_id").and_then(Value::as_str).map(str::to_string);
    out.stall_count = e("stall_count").and_then(Value::as_u64).unwrap_or(0) as u32;
    out
}

impl Rows {
    pub fn pair(&self, hid: &str) -> Pair {
        Pair { handoff: self.handoffs.get(hid).cloned(), own: self.ownership.get(hid).cloned() }
    }

    /// The leadership term is live at `at` (with the clock skew allowed).
    pub fn leader_live(&self, at: f64, p: &Params) -> bool {
        self.leadership.as_ref().and_then(|l| f(l, "expires_at")).is_some_and(|e| e + p.skew_s >= at)
    }

    /// Apply one change's `new` row (or its removal).
    pub fn apply(&mut self, c: &super::Change) {
        use super::types::{RowOp, Table};
        let hid = c.hid.clone().unwrap_or_default();
        let gone = matches!(c.op, RowOp::Delete | RowOp::Replace);
        match c.table {
            Table::Handoffs => set(&mut self.handoffs, hid, c.new.clone(), gone),
            Table::Ownership => set(&mut self.ownership, hid, c.new.clone(), gone),
            Table::Checkpoints => {
                if let (false, Some(seq)) = (gone, c.new.as_ref().and_then(|n| i(n, "seq"))) {
                    let last = self.last_seq.entry(hid).or_insert(seq);
                    *last = (*last).max(seq);
                } else if gone {
                    self.last_seq.remove(&hid);
                }
            }
            Table::Leadership => self.leadership = if gone { None } else { c.new.clone() },
        }
    }
}

fn set(m: &mut BTreeMap<String, Value>, hid: String, new: Option<Value>, gone: bool) {
    match (gone, new) {
        (false, Some(v)) => {
            m.insert(hid, v);
        }
        _ => {
            m.remove(&hid);
        }
    }
}
