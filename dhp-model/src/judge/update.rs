//! Ownership row updates: heartbeat, orphan (and its repairs R1, R5), recover.

use super::facts::Bump;
use super::rows::{tm, Pair};
use super::tables::describe;
use super::{Judge, Variant, Verdict};
use crate::ops::{self, Lease, OrphanReason};
use crate::state::{Status, ORPHANED};

/// Slack between the harness's clock (facts) and the store's, seconds.
const FACT_SLACK_S: f64 = 1.0;

fn illegal(rule: &str, closest: Vec<String>, message: String) -> Verdict {
    Verdict::Illegal { rule: rule.to_string(), closest, message }
}

impl Judge {
    /// An ownership row changed in place.
    pub(super) fn own_update(&mut self, hid: &str, b: &Pair, a: &Pair, at: f64, seq: i64) -> Verdict {
        let (oh, nh) = (b.holder().unwrap_or_default(), a.holder().unwrap_or_default());
        let (of, nf) = (b.fence().unwrap_or(-1), a.fence().unwrap_or(-1));
        match (oh == ORPHANED, nh == ORPHANED) {
            (false, false) if oh == nh && of == nf => self.heartbeat(hid, b, a, at, seq),
            (false, true) => self.orphan(hid, b, a, at, seq),
            (true, false) => self.recover(hid, b, a, at),
            (false, false) if oh != nh => illegal(
                "§5.4 ownership passes to another worker only through the orphan tombstone [fencing]",
                vec![
                    format!("recover by {nh}: needs holder __orphaned__, the row had {oh} (fence {of})"),
                    "orphan: sets holder __orphaned__".into(),
                ],
                format!("{hid}: ownership moved from {oh} (fence {of}) to {nh} (fence {nf}) without an orphan"),
            ),
            _ => illegal(
                "§5.1 a fence changes only by orphan or recover, by one [fencing]",
                vec![format!(
                    "heartbeat keeps the fence; orphan and recover change the holder too ({oh} {of} → {nh} {nf})"
                )],
                format!("{hid}: fence {of} → {nf} in place"),
            ),
        }
    }

    /// §5.5 Heartbeat: the ownership check (a live lease, status running),
    /// then the stored TTL from now.
    fn heartbeat(&mut self, hid: &str, b: &Pair, a: &Pair, at: f64, seq: i64) -> Verdict {
        if b.status() != a.status() {
            return illegal(
                "§5.5 a heartbeat changes the lease only [heartbeat-extends-lease]",
                vec![format!("heartbeat: the status moved {:?} → {:?}", b.status(), a.status())],
                format!("{hid}: lease and status changed together"),
            );
        }
        let (holder, fence) = (b.holder().unwrap_or_default().to_string(), b.fence().unwrap_or(-1));
        let mut st = b.model(hid, &self.rows, &self.params);
        let lease = Lease { hid: hid.to_string(), holder: holder.clone(), fence };
        match ops::heartbeat(&mut st, &lease, tm(self.held_at(at) - self.params.skew_s)) {
            Ok(ttl) => {
                let new = a.lease().unwrap_or(0.0);
                if tm(new) > tm(at + self.params.skew_s) + ttl + tm(0.5) {
                    return illegal(
                        "§5.5 a heartbeat extends the lease by the stored TTL [heartbeat-extends-lease]",
                        vec![format!(
                            "heartbeat by {holder}: lease until at most {:.3}, got {new:.3}",
                            at + ttl as f64 / super::rows::UNITS_PER_S
                        )],
                        format!("{hid}: lease extended past its TTL"),
                    );
                }
                Verdict::Legal
            }
            Err(ops::OpError::LeaseLost) => {
                let bump = Bump { holder: holder.clone(), fence, seq: 0, at: b.lease().unwrap_or(at) };
                let msg =
                    format!("heartbeat of {hid} by {holder} (fence {fence}) after its lease ran out at {:.3}", bump.at);
                self.stale(
                    hid,
                    "§5.2 LeaseLost: a write needs a live lease [lease-expiry-lease-lost]",
                    seq,
                    at,
                    bump,
                    msg,
                )
            }
            Err(e) => illegal(
                "§5.2 the ownership check: writes need status running [fencing]",
                vec![format!("heartbeat by {holder}: {e}")],
                format!("{hid}: heartbeat refused by the model ({e})"),
            ),
        }
    }

    /// §5.4 / §7.2 Orphan (and the repairs R1, R5 that also make a
    /// tombstone): fence + 1, a live leader term, an expired lease or a dead
    /// holder (or a stall, which the audit cannot see), and the DLQ at
    /// max_attempts.
    fn orphan(&mut self, hid: &str, b: &Pair, a: &Pair, at: f64, seq: i64) -> Verdict {
        let (oh, of, nf) =
            (b.holder().unwrap_or_default().to_string(), b.fence().unwrap_or(-1), a.fence().unwrap_or(-1));
        if nf != of + 1 {
            return illegal(
                "§5.4 an orphan bumps the fence by exactly one [fencing]",
                vec![format!("orphan of {oh}: fence {} expected, {nf} written", of + 1)],
                format!("{hid}: orphaned from fence {of} to {nf}"),
            );
        }
        let term_rule = "§7.1 an orphan needs a live leader term [leader-election]";
        let live = self.rows.leader_live(self.held_at(at), &self.params);
        let late_term = if live { None } else { self.late_term_excuse(at) };
        if !live && late_term.is_none() {
            return illegal(
                term_rule,
                vec![format!(
                    "orphan of {oh}: only the leader acts, and the leadership row shows {}",
                    self.rows
                        .leadership
                        .as_ref()
                        .map_or("no term".to_string(), |l| format!("a term that ended at {}", l["expires_at"]))
                )],
                format!("{hid} orphaned while no leader term was live"),
            );
        }
        self.bumps.entry(hid.to_string()).or_default().push(Bump { holder: oh.clone(), fence: of, seq, at });
        let expired = b.lease().is_some_and(|l| l < at + self.params.skew_s);
        // `at` is the orphaning leader's clock, the death the harness's
        let leader = self.rows.leadership.as_ref().and_then(|l| l["holder"].as_str()).unwrap_or_default();
        let real = self.params.real_at(leader, at);
        let dead = self.facts.died_by(&oh, real, FACT_SLACK_S) || self.facts.token_lost(&oh, real, FACT_SLACK_S);
        let reason = a.exec_s("orphan_reason").unwrap_or_default();
        let r = match (b.status(), expired, dead, reason) {
            (Some(Status::Pending | Status::Orphaned), ..) => return self.repair_tomb(hid, b, a, at, expired),
            (_, true, ..) => OrphanReason::LeaseExpired,
            (_, _, true, _) => OrphanReason::WorkerDied,
            (_, _, _, "stalled") => OrphanReason::Stalled,
            _ => {
                return illegal(
                    "§7.2 an orphan needs an expired lease or a dead holder [no-lost-results]",
                    vec![format!(
                        "orphan of {oh}: its lease ran until {:.3} (commit at {at:.3}) and the harness did not see {oh} die; reason {reason:?}",
                        b.lease().unwrap_or(0.0)
                    )],
                    format!("{hid} orphaned from a live holder"),
                )
            }
        };
        let mut st = self.model_led(hid, b);
        match ops::orphan(&mut st, "leader", hid, r, dead, tm(at + self.params.skew_s)) {
            Ok(_) => {}
            Err(e) => {
                return illegal(
                    "§7.2 orphan [no-lost-results]",
                    vec![format!("orphan: {e}")],
                    format!("{hid}: orphan refused by the model"),
                )
            }
        }
        let v = self.expect_status(hid, &st, a, "orphan");
        if let (Verdict::Legal, Some(why)) = (&v, late_term) {
            return Verdict::Excused { rule: term_rule.to_string(), why };
        }
        if v == Verdict::Legal && r == OrphanReason::Stalled {
            return Verdict::Undecidable(format!(
                "{hid} orphaned from {oh} for a stall under a live lease: the stall clock (the progress table) is not audited"
            ));
        }
        v
    }

    /// In the check-then-write variant: why an orphan committed after the
    /// leader's term ended is the reference's weakness (PROTOCOL §13.8: it
    /// checks its term at a scan's start, in a statement of its own, and
    /// writes its orphans later — past the term when the scan was held up,
    /// e.g. by a stopped worker's write lock); `None` in the strict model,
    /// without a leadership row, or when the last leader had died before
    /// the orphan (then someone else wrote it).
    fn late_term_excuse(&self, at: f64) -> Option<String> {
        if self.variant != Variant::CheckThenWrite {
            return None;
        }
        let l = self.rows.leadership.as_ref()?;
        let holder = l["holder"].as_str()?;
        let ends = l["expires_at"].as_f64()?;
        if self.facts.died_before(holder, self.params.real_at(holder, at)) {
            return None;
        }
        Some(format!(
            "{holder}'s term ended at {ends:.3}, {:.3}s before this orphan, and no one took it since; {holder} was alive: \
             the reference checks its leadership and writes in separate statements (PROTOCOL §13.8)",
            at - ends
        ))
    }

    /// R1 (pending beside an expired holder) and R5 (orphaned beside an
    /// expired holder): the tombstone at fence + 1.
    fn repair_tomb(&mut self, hid: &str, b: &Pair, a: &Pair, at: f64, expired: bool) -> Verdict {
        let mut st = self.model_led(hid, b);
        let now = tm(at + self.params.skew_s);
        match ops::repair_torn(&mut st, "leader", hid, true, now) {
            Ok(_) if expired => self.expect_status(hid, &st, a, "repair R1/R5"),
            Ok(_) | Err(_) => illegal(
                "torn-states.md R1/R5: a torn state's holder is fenced out only once its lease expired",
                vec![format!("repair of {:?} beside {}: the lease had not expired", b.status(), describe(b))],
                format!("{hid}: tombstone written over a live lease"),
            ),
        }
    }

    /// §5.4 Recover: from the tombstone, fence + 1, attempt + 1, status running.
    fn recover(&mut self, hid: &str, b: &Pair, a: &Pair, at: f64) -> Verdict {
        let (nh, of, nf) =
            (a.holder().unwrap_or_default().to_string(), b.fence().unwrap_or(-1), a.fence().unwrap_or(-1));
        let rule = "§5.4 recover: from the orphan tombstone, fence + 1, attempt + 1 [exactly-one-wins]";
        let mut st = b.model(hid, &self.rows, &self.params);
        if let Err(e) = ops::recover(&mut st, hid, &nh, of, tm(6.0), tm(at)) {
            return illegal(
                rule,
                vec![format!("recover by {nh}: {e}")],
                format!("{hid} recovered by {nh} in status {:?}", b.status()),
            );
        }
        let want_attempt = b.attempt() + 1;
        if nf != of + 1 || a.attempt() != want_attempt || a.status() != Some(Status::Running) {
            return illegal(
                rule,
                vec![format!(
                    "recover by {nh} of the orphan at fence {of}: fence {}, attempt {want_attempt}, running; the store has fence {nf}, attempt {}, {:?}",
                    of + 1,
                    a.attempt(),
                    a.status()
                )],
                format!("{hid}: recover from fence {of} to {nf}"),
            );
        }
        Verdict::Legal
    }
}
