//! Checkpoint and leadership changes.

use super::facts::Bump;
use super::rows::{f, i, s};
use super::{Change, Judge, RowOp, Verdict};
use crate::state::{Status, ORPHANED};

/// The harness reaps a death within milliseconds; a loaded machine may take
/// longer to record it than a follower takes to notice it (as dhp-chaos's
/// one-leader check allows).
const REAP_SLACK_S: f64 = 1.0;

/// The resolution of an audit row's `at` (SQLite's `julianday('now')`: 1 ms), with a margin.
const AT_RESOLUTION_S: f64 = 0.002;

impl Judge {
    /// §6.2 A checkpoint needs the current holder, its fence, a live lease,
    /// status running, and `seq = max + 1`. Rows are never rewritten, and
    /// kept until a re-dispatch empties them.
    pub(super) fn checkpoint(&mut self, c: &Change) -> Verdict {
        let hid = c.hid.clone().unwrap_or_default();
        let pair = self.rows.pair(&hid);
        match c.op {
            RowOp::Insert => {}
            RowOp::Delete | RowOp::Replace if matches!(pair.status(), None | Some(Status::Pending)) => {
                return Verdict::Legal;
            }
            _ => {
                return Verdict::Illegal {
                    rule: "§6.2 checkpoint rows are append-only [no-lost-results]".into(),
                    closest: vec![format!(
                        "no operation {:?}s a checkpoint row of a {:?} handoff",
                        c.op,
                        pair.status()
                    )],
                    message: format!("checkpoint of {hid} {:?}d", c.op),
                };
            }
        }
        let seq = c.new.as_ref().and_then(|n| i(n, "seq")).unwrap_or(-1);
        let since = self.last_ckpt_at.insert(hid.clone(), c.at).unwrap_or(f64::MIN);
        if pair.status() == Some(Status::Pending) && pair.own.is_none() && !self.owned_ever.contains(&hid) {
            return Verdict::Legal; // imported by ingest or resume (§8, §10): keeps its seq
        }
        let want = self.rows.last_seq.get(&hid).map_or(0, |x| x + 1);
        let (holder, fence) = (pair.holder().unwrap_or("nobody").to_string(), pair.fence().unwrap_or(-1));
        let valid = pair.own.is_some()
            && !pair.tomb()
            && pair.lease().is_some_and(|l| l + self.params.skew_s >= c.check_at())
            && pair.status() == Some(Status::Running);
        let rule = "§5.2 a checkpoint needs the current holder, fence and a live lease [fencing]";
        if !valid {
            let expiry = Bump { holder: holder.clone(), fence, seq: 0, at: pair.lease().unwrap_or(c.at) };
            // The harness's record names the writer: the holder itself, at
            // its fence, writing after its lease ran out (the bump that
            // matters is the expiry), or an earlier holder
            let by_holder = pair.own.is_some()
                && !pair.tomb()
                && self.facts.carried_by(&hid, seq).is_some_and(|(w, f)| w == holder && f == fence);
            let bump = if by_holder { expiry } else { self.last_bump(&hid, c.at).unwrap_or(expiry) };
            let msg = format!(
                "checkpoint seq {seq} of {hid} committed while the store showed {} (status {:?}): a write without a valid fence, presumably {}'s (fence {})",
                describe(&pair),
                pair.status(),
                bump.holder,
                bump.fence
            );
            return self.stale(&hid, rule, c.seq, c.at, bump, msg);
        }
        // The harness's chunk log names the writer: the chunk the checkpoint
        // carries (its stamp, `Fact::CarriedBy`), else the one worker, alive
        // at the commit, served since the last checkpoint. SQLite's `at` has
        // millisecond resolution: a chunk stamped up to 2 ms after it may be
        // this checkpoint's.
        let named = match self.facts.carried_by(&hid, seq) {
            Some(n) => Some(n),
            None => {
                let mut served = self.facts.served(&hid, since, c.at + AT_RESOLUTION_S);
                served.retain(|(w, _)| !self.facts.died_before(w, self.params.real_at(w, c.at)));
                if served.len() != 1 {
                    self.unattributed += 1;
                }
                match served.as_slice() {
                    [(w, wf)] => Some((w.clone(), *wf)),
                    _ => None,
                }
            }
        };
        if let Some((w, wf)) = named.as_ref().map(|(w, f)| (w, f)) {
            if *wf < fence {
                let bump =
                    self.bump_of(&hid, w, *wf).unwrap_or(Bump { holder: w.clone(), fence: *wf, seq: 0, at: c.at });
                let msg = format!(
                    "checkpoint seq {seq} of {hid} by {w} with fence {wf}, committed while the store's fence was {fence} ({holder})"
                );
                return self.stale(&hid, "§5.2 a checkpoint with a superseded fence [fencing]", c.seq, c.at, bump, msg);
            }
        }
        if seq != want {
            return Verdict::Illegal {
                rule: "§6.2 a checkpoint gets seq = max(seq) + 1 [no-lost-results]".into(),
                closest: vec![format!("checkpoint by {holder} (fence {fence}): the next seq was {want}, not {seq}")],
                message: format!("checkpoint of {hid} with seq {seq}, expected {want}"),
            };
        }
        Verdict::Legal
    }

    /// §7.1 Leadership: a take (INSERT, or UPDATE to another holder, or an
    /// INSERT after a REPLACE) needs an absent or expired term — or, by
    /// dhp-rs's liveness fast path, a leader the harness saw die. A renewal
    /// is by the holder; no term is longer than `DHP_LEADER_TTL_S`. `None`:
    /// a REPLACE, judged with the INSERT that follows (`group` gets it).
    pub(super) fn leadership(&mut self, c: &Change, group: &mut Vec<Change>) -> Option<Verdict> {
        let old = match c.op {
            RowOp::Replace => {
                if self.replaced.replace(c.clone()).is_some() {
                    self.report.indeterminate += 1; // a REPLACE without its INSERT
                }
                return None;
            }
            RowOp::Delete => return Some(Verdict::Legal), // resign (§7.1, dhp-rs)
            RowOp::Insert => self.replaced.take().and_then(|r| {
                group.insert(0, r.clone());
                r.old
            }),
            RowOp::Update => c.old.clone(),
        };
        let new = c.new.clone().unwrap_or_default();
        let nh = s(&new, "holder").unwrap_or_default().to_string();
        let term = f(&new, "expires_at").unwrap_or(0.0) - c.at;
        if term > self.params.leader_ttl_s + self.params.skew_s + 0.5 {
            return Some(Verdict::Illegal {
                rule: "§7.1 a term is DHP_LEADER_TTL_S from now [leader-renews-term]".into(),
                closest: vec![format!(
                    "acquire/renew by {nh}: a term of {term:.3}s exceeds {}s",
                    self.params.leader_ttl_s
                )],
                message: format!("{nh}'s term runs {term:.3}s"),
            });
        }
        let Some(old) = old else { return Some(Verdict::Legal) }; // a take of an absent row
        let oh = s(&old, "holder").unwrap_or_default();
        let exp = f(&old, "expires_at").unwrap_or(0.0);
        // the taker's `at` is in its own clock, the death in the harness's
        let dead = self.facts.died_by(oh, self.params.real_at(&nh, c.at), REAP_SLACK_S);
        if oh == nh || exp < c.at + self.params.skew_s || dead {
            return Some(Verdict::Legal);
        }
        let how = if c.op == RowOp::Insert { "INSERT OR REPLACE" } else { "UPDATE" };
        Some(Verdict::Illegal {
            rule: "§7.1 a leader take needs an absent or expired term [leader-election]".into(),
            closest: vec![
                format!(
                    "acquire by {nh}: {oh}'s term had {:.3}s to run, and the harness did not see {oh} die",
                    exp - c.at
                ),
                format!("renew: only by the holder {oh}, not {nh}"),
            ],
            message: format!("{nh} took the leadership ({how}) inside {oh}'s live term"),
        })
    }

    /// The last holder fenced out of `hid` at or before `at`.
    pub(super) fn last_bump(&self, hid: &str, at: f64) -> Option<Bump> {
        self.bumps.get(hid)?.iter().rev().find(|b| b.at <= at + self.params.skew_s).cloned()
    }

    /// The bump that fenced out (holder, fence) of `hid`.
    pub(super) fn bump_of(&self, hid: &str, holder: &str, fence: i64) -> Option<Bump> {
        self.bumps.get(hid)?.iter().find(|b| b.holder == holder && b.fence == fence).cloned()
    }
}

/// What the ownership row says, in words.
pub(super) fn describe(p: &super::rows::Pair) -> String {
    match (p.holder(), p.fence()) {
        (None, _) => "no ownership row".into(),
        (Some(ORPHANED), Some(f)) => format!("the orphan tombstone (fence {f})"),
        (Some(h), Some(f)) => format!("{h} at fence {f}, lease until {:.3}", p.lease().unwrap_or(0.0)),
        (Some(h), None) => h.to_string(),
    }
}
