//! The store audit read back (`crate::audit`): ownership transitions,
//! orphans, grants, leadership terms and handoff status changes, all in the
//! store's commit order. Nothing here comes from a process under test.

use crate::audit::Event;
use crate::round::ORPHANED;
use serde_json::Value;
use std::path::Path;

/// The audit of a round, in commit order.
pub(crate) struct AuditIx {
    pub(crate) events: Vec<Event>,
    /// hid → positions in `events` of its ownership changes, in commit order.
    own_by_hid: std::collections::HashMap<String, Vec<usize>>,
    /// Every ownership change, classified (computed once).
    transitions: Vec<Transition>,
}

/// An ownership change of one handoff, classified.
#[derive(Debug, Clone)]
pub(crate) struct Transition {
    pub(crate) seq: i64,
    pub(crate) at: f64,
    pub(crate) hid: String,
    pub(crate) kind: Kind,
    pub(crate) old: Option<(String, i64)>,
    pub(crate) new: Option<(String, i64)>,
}

/// What an ownership change was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// INSERT: a claim.
    Claim,
    /// Same holder, same fence: a heartbeat (or lease change).
    Renew,
    /// A holder → `__orphaned__`.
    Orphan,
    /// `__orphaned__` → a holder.
    Recover,
    /// A holder → another holder, no orphan in between.
    Steal,
    /// Same holder, fence changed; or `__orphaned__` re-orphaned.
    Other,
    /// DELETE: completion, release, budget kill.
    Delete,
}

fn pair(v: Option<&Value>) -> Option<(String, i64)> {
    let v = v?;
    Some((v.get("holder")?.as_str()?.to_string(), v.get("fence")?.as_i64()?))
}

impl AuditIx {
    /// Read the audit of the store in `store_dir` (SQLite file or PostgreSQL
    /// export); `None` when the round has none.
    pub(crate) fn load(store_dir: &Path) -> crate::error::Result<Option<AuditIx>> {
        use crate::Error;
        let export = store_dir.join("export.json");
        let events = if export.exists() {
            let bytes = std::fs::read(&export).map_err(Error::io("reading", &export))?;
            let v: Value =
                serde_json::from_slice(&bytes).map_err(|source| Error::Json { path: export.clone(), source })?;
            match v.get("audit") {
                Some(a) => Some(serde_json::from_value::<Vec<Event>>(a.clone()).map_err(|e| Error::CheckerInput {
                    path: export.clone(),
                    problem: format!("audit is not a list of events: {e}"),
                })?),
                None => None,
            }
        } else {
            let db = store_dir.join("dhp.sqlite3");
            if !db.exists() {
                return Ok(None);
            }
            crate::audit::read_sqlite(&db)?
        };
        Ok(events.map(AuditIx::new))
    }

    fn new(events: Vec<Event>) -> AuditIx {
        let mut own_by_hid: std::collections::HashMap<String, Vec<usize>> = Default::default();
        for (i, e) in events.iter().enumerate().filter(|(_, e)| e.table == "ownership") {
            own_by_hid.entry(e.hid.clone().unwrap_or_default()).or_default().push(i);
        }
        let transitions = classify(&events);
        AuditIx { events, own_by_hid, transitions }
    }

    /// Every ownership change, classified, in commit order.
    pub(crate) fn transitions(&self) -> &[Transition] {
        &self.transitions
    }
}

fn classify(events: &[Event]) -> Vec<Transition> {
    events
        .iter()
        .filter(|e| e.table == "ownership")
        .map(|e| {
            let (old, new) = (pair(e.old.as_ref()), pair(e.new.as_ref()));
            let kind = match (&old, &new) {
                (None, Some(_)) => Kind::Claim,
                (Some(_), None) | (None, None) => Kind::Delete,
                (Some((oh, of)), Some((nh, nf))) => {
                    let (oo, no) = (oh == ORPHANED, nh == ORPHANED);
                    match (oo, no) {
                        (false, true) => Kind::Orphan,
                        (true, false) => Kind::Recover,
                        (false, false) if oh != nh => Kind::Steal,
                        (false, false) if of == nf => Kind::Renew,
                        _ => Kind::Other,
                    }
                }
            };
            Transition { seq: e.seq, at: e.at, hid: e.hid.clone().unwrap_or_default(), kind, old, new }
        })
        .collect()
}

impl AuditIx {
    /// The ownership row of `hid` as the transaction of the change at audit
    /// `seq` found it: the row after the last ownership change before
    /// `seq` — or, when that change is the DELETE just before `seq` (the
    /// same transaction deleting the row first), the row it deleted.
    pub(crate) fn ownership_seen(&self, hid: &str, seq: i64) -> Option<(String, i64)> {
        let own = self.own_by_hid.get(hid)?;
        let k = own.partition_point(|&i| self.events[i].seq < seq);
        let li = *own.get(k.checked_sub(1)?)?;
        let last = &self.events[li];
        if last.new.is_none() {
            // no other change committed between the DELETE and `seq`
            let adjacent = self.events.get(li + 1).is_none_or(|e| e.seq >= seq);
            return if adjacent { pair(last.old.as_ref()) } else { None };
        }
        pair(last.new.as_ref())
    }

    /// When `(holder, fence)` of `hid` was taken away in the store (an
    /// orphan, or a change to another holder or fence): (audit time, seq).
    pub(crate) fn superseded(&self, hid: &str, holder: &str, fence: i64) -> Option<(f64, i64)> {
        self.transitions()
            .iter()
            .filter(|t| t.hid == hid && matches!(t.kind, Kind::Orphan | Kind::Steal | Kind::Other))
            .find(|t| t.old.as_ref().is_some_and(|(h, f)| h == holder && *f == fence))
            .map(|t| (t.at, t.seq))
    }

    /// The changes of `hid`'s `handoffs` row.
    pub(crate) fn handoff_changes<'a>(&'a self, hid: &'a str) -> impl Iterator<Item = &'a Event> + 'a {
        self.events.iter().filter(move |e| e.table == "handoffs" && e.hid.as_deref() == Some(hid))
    }

    /// The checkpoint rows of `hid` as committed, in commit order.
    pub(crate) fn checkpoint_inserts<'a>(&'a self, hid: &'a str) -> impl Iterator<Item = &'a Event> + 'a {
        self.events
            .iter()
            .filter(move |e| e.table == "checkpoints" && e.op == "INSERT" && e.hid.as_deref() == Some(hid))
    }

    /// The handoff change right after an orphan (same transaction): its
    /// `execution.orphan_reason`, and whether it parked the handoff (failed).
    pub(crate) fn orphan_outcome(&self, t: &Transition) -> (Option<String>, bool) {
        let next = self
            .events
            .iter()
            .filter(|e| {
                e.seq > t.seq && e.seq <= t.seq + 4 && e.table == "handoffs" && e.hid.as_deref() == Some(t.hid.as_str())
            })
            .find(|e| matches!(e.new_s("status"), Some("orphaned") | Some("failed")));
        match next {
            Some(e) => (
                e.new
                    .as_ref()
                    .and_then(|n| n.pointer("/execution/orphan_reason"))
                    .and_then(Value::as_str)
                    .map(String::from),
                e.new_s("status") == Some("failed"),
            ),
            None => (None, false),
        }
    }
}

/// `next_n` of a checkpoint row's state (audit rows carry `state_json` as text).
pub(crate) fn next_n(e: &Event) -> Option<u64> {
    let s = e.new.as_ref()?.get("state_json")?;
    match s {
        Value::String(t) => serde_json::from_str::<Value>(t).ok()?.get("next_n")?.as_u64(),
        v => v.get("next_n")?.as_u64(),
    }
}
