//! Changes of a handoff's `handoffs` and `ownership` rows, judged as one
//! operation of the model from the rows before to the rows after.

use serde_json::Value;

use super::facts::Bump;
use super::rows::{ex, tm, Pair};
use super::tables::describe;
use super::{Change, Judge, Variant, Verdict};
use crate::ops::{self, Lease};
use crate::state::{Leadership, State, Status, Time, ORPHANED};

fn illegal(rule: &str, closest: Vec<String>, message: String) -> Verdict {
    Verdict::Illegal { rule: rule.to_string(), closest, message }
}

/// `execution` of a pair's handoff row.
fn exec(p: &Pair) -> Option<&Value> {
    p.handoff.as_ref()?.get("execution")
}

/// Field `k` of `execution`, before and after, differ.
fn moved(b: &Pair, a: &Pair, k: &str) -> bool {
    let g = |p: &Pair| p.handoff.as_ref().and_then(|h| ex(h, k)).cloned();
    g(b) != g(a)
}

impl Judge {
    /// The model state of `b`, with the leader check already passed (the
    /// judge checks the term itself, with the clock skew allowed).
    pub(super) fn model_led(&self, hid: &str, b: &Pair) -> State {
        let mut st = b.model(hid, &self.rows, &self.params);
        st.leadership = Some(Leadership { holder: "leader".into(), expires_at: Time::MAX });
        st
    }

    fn skewed(&self, at: f64) -> Time {
        tm(at - self.params.skew_s)
    }

    /// When a holder's write of the operation at `at` is judged — a worker
    /// under its lease, a supervisor under its leader term: the start of
    /// its transaction when the audit knows it (the check ran between that
    /// and the commit; a lease or term live then may have passed it), else
    /// `at`. What a take-over needs expired is judged at `at`, the commit.
    pub(super) fn held_at(&self, at: f64) -> f64 {
        self.check_at.map_or(at, |b| b.min(at))
    }

    /// Judge one operation on `hid`: the rows `b` before, `a` after.
    pub(super) fn judge_owned(&mut self, hid: &str, b: &Pair, a: &Pair, changes: &[Change]) -> Verdict {
        let (Some(first), Some(last)) = (changes.first(), changes.last()) else { return Verdict::Legal };
        // The first statement carries the operation's checks (the reference
        // writes its second one later).
        let (at, seq) = (first.at, last.seq);
        self.check_at = first.began_at;
        if let Some(v) = self.terminal(hid, b, a) {
            return self.stale_completion(hid, b, a, at, seq, v);
        }
        match (&b.own, &a.own) {
            (None, None) => self.status_only(hid, b, a, at, seq),
            (Some(x), Some(y)) if x == y => self.status_only(hid, b, a, at, seq),
            (None, Some(_)) => self.own_insert(hid, b, a, at),
            (Some(_), None) => self.own_delete(hid, b, a, at, seq),
            (Some(_), Some(_)) => self.own_update(hid, b, a, at, seq),
        }
    }

    /// Rows that come and go, and the terminal statuses (§4, §6.1, §6.3).
    /// A completion over a completion, in the check-then-write variant
    /// (§13.2: the reference checks `status == running`, then writes). By a
    /// worker fenced out before (its envelope names its runner_id and
    /// fence): a stale write, judged by [`Judge::stale`]. By the current
    /// holder with its fence: its check may have passed before the earlier
    /// completion committed — excused.
    fn stale_completion(&mut self, hid: &str, b: &Pair, a: &Pair, at: f64, seq: i64, v: Verdict) -> Verdict {
        let Verdict::Illegal { rule, message, .. } = &v else { return v };
        if self.variant != Variant::CheckThenWrite || !rule.starts_with("§6.3 a completion is accepted once") {
            return v;
        }
        let fence = a.handoff.as_ref().and_then(|h| ex(h, "fence")?.as_i64());
        let (Some(w), Some(f)) = (a.exec_s("runner_id"), fence) else { return v };
        if b.holder() == Some(w) && b.fence() == Some(f) {
            let why = format!(
                "{w}, the holder at fence {f}, completed over an earlier completion: its check (status running) could have passed before that one committed; the reference writes in a separate statement (PROTOCOL §13.2)"
            );
            return Verdict::Excused { rule: rule.clone(), why };
        }
        let bump = self.bump_of(hid, w, f);
        match bump {
            Some(bump) => {
                let (rule, message) = (rule.clone(), message.clone());
                self.stale(hid, &rule, seq, at, bump, message)
            }
            None => v,
        }
    }

    fn terminal(&self, hid: &str, b: &Pair, a: &Pair) -> Option<Verdict> {
        let (sb, sa) = (b.status(), a.status());
        match (sb, sa) {
            (None, Some(Status::Pending)) if a.own.is_none() => return Some(Verdict::Legal), // dispatch, resume, ingest
            (None, Some(st)) => {
                return Some(illegal(
                    "§6.1 a handoff enters the store pending, unowned [no-crossed-inputs]",
                    vec![format!("dispatch: inserts status pending, not {st}")],
                    format!("{hid} inserted as {st}"),
                ))
            }
            (Some(st), None) => {
                return Some(illegal(
                    "§4 a handoff row is never deleted",
                    vec![format!("no operation deletes a {st} handoff")],
                    format!("{hid} deleted"),
                ))
            }
            (None, None) => {
                return Some(illegal(
                    "§5.3 ownership of an absent handoff (UnknownHandoff)",
                    vec!["claim: UnknownHandoff".into()],
                    format!("ownership of {hid}, which has no handoff row, changed"),
                ))
            }
            _ => {}
        }
        if sb == Some(Status::Failed) && (sa != sb || exec(b) != exec(a)) {
            return Some(illegal(
                "§4 a failed (DLQ) handoff never changes again [dead-letter-queue]",
                vec![format!("every operation refuses a failed handoff; it became {}", sa.map_or("?", Status::as_str))],
                format!("{hid} left the DLQ or was rewritten there ({})", describe(a)),
            ));
        }
        if sb == Some(Status::Completed) && sa != sb {
            if let Some(why) = self.over_a_stale_completion(hid, b) {
                return Some(Verdict::Excused { rule: "§4 completed is terminal [idempotent-complete]".into(), why });
            }
            return Some(illegal(
                "§4 completed is terminal [idempotent-complete]",
                vec![format!(
                    "complete again: a no-op; nothing moves a completed handoff to {}",
                    sa.map_or("?", Status::as_str)
                )],
                format!("{hid} left completed"),
            ));
        }
        if sb == Some(Status::Completed) && (moved(b, a, "completed_at") || moved(b, a, "runner_id")) {
            return Some(illegal(
                "§6.3 a completion is accepted once [idempotent-complete]",
                vec!["complete of a completed handoff: a no-op, the first result stands".into()],
                format!("{hid}'s completion was committed again over the first one"),
            ));
        }
        None
    }

    /// The ownership row did not change: suspend, ack, counters, the
    /// supervisor's status-only writes, and stale writes.
    fn status_only(&mut self, hid: &str, b: &Pair, a: &Pair, at: f64, seq: i64) -> Verdict {
        use Status::*;
        let (Some(sb), Some(sa)) = (b.status(), a.status()) else { return Verdict::Legal };
        let err = a.exec_s("error").unwrap_or_default().to_string();
        let owner_ok =
            b.own.is_some() && !b.tomb() && b.lease().is_some_and(|l| l + self.params.skew_s >= self.held_at(at));
        if moved(b, a, "attempt") || moved(b, a, "fence") {
            if let Some(bump) = self.stale_writer(hid, b, a) {
                // a fenced-out holder wrote its own view of the row back
                let msg = format!(
                    "{hid} written back to {}'s view (fence {}, attempt {}) while the store showed {}",
                    bump.holder,
                    bump.fence,
                    a.attempt(),
                    describe(b)
                );
                let rule = "§5.2 a worker writes only with the current fence and a live lease [fencing]";
                return self.stale(hid, rule, seq, at, bump, msg);
            }
        }
        match (sb, sa) {
            _ if moved(b, a, "attempt") || (moved(b, a, "fence") && sa != Failed) => illegal(
                "§5.3 only recover and resume add to attempt; only claim and recover set the fence",
                vec![format!("{sb} → {sa} without an ownership change: no operation moves attempt or fence")],
                format!("{hid}'s attempt or fence changed in place"),
            ),
            (Running, Running) if exec(b) == exec(a) => Verdict::Legal,
            (Running, Running) if owner_ok => {
                self.unnamed_writes += 1;
                Verdict::Legal
            }
            (Running | Orphaned, Running | Completed | Pending) | (Running, Failed)
                if !owner_ok && !err.starts_with("budget") && !is_dlq(&err) =>
            {
                let bump = self.bump_for(hid, b, at);
                let msg = format!("{hid} written ({sb} → {sa}) while the store showed {}", describe(b));
                self.stale(
                    hid,
                    "§5.2 a worker writes only with the current fence and a live lease [fencing]",
                    seq,
                    at,
                    bump,
                    msg,
                )
            }
            (Running, Suspended)
            | (Suspended, Suspended)
            | (Pending, Pending)
            | (Orphaned, Orphaned)
            | (Completed, Completed) => Verdict::Legal,
            (Running | Orphaned, Failed) if err.starts_with("budget") => self.kill(hid, b, a, at),
            (Running | Pending, Orphaned | Failed) if b.tomb() => self.repair_status(hid, b, a, at),
            _ => illegal(
                "§4 the status moves only as the state machine says [wrong-state-operations]",
                vec![format!("no operation moves {sb} to {sa} while the ownership row stays {}", describe(b))],
                format!("{hid}: {sb} → {sa}"),
            ),
        }
    }

    /// The holder a stale write on `hid` presumably came from: the last one
    /// fenced out, else the current holder whose lease ran out.
    /// Check-then-write (§13.2) only: the completion this write undoes was
    /// itself a fenced-out holder's stale write, so the writer's status
    /// check (orphaned, say, for a recover) could have passed before that
    /// completion landed. The stale completion is reported on its own
    /// (the exactly-once and fencing invariants).
    fn over_a_stale_completion(&self, hid: &str, b: &Pair) -> Option<String> {
        if self.variant != Variant::CheckThenWrite {
            return None;
        }
        let runner = b.exec_s("runner_id")?;
        let fence = b.handoff.as_ref().and_then(|h| ex(h, "fence")?.as_i64())?;
        // a bump fenced its writer out: a completion is terminal, so no bump
        // follows a completion by the holder of the time
        let bump = self.bump_of(hid, runner, fence)?;
        Some(format!(
            "{runner}'s completion (fence {fence}) was a stale write, its fence bumped at audit seq {} ({:.3}); this write's own check could have passed before it landed: the reference checks and writes in separate statements (PROTOCOL §13.2)",
            bump.seq, bump.at
        ))
    }

    /// The bump that fenced out the runner and fence the row after names,
    /// when they are not the ownership row's: a stale holder's write.
    fn stale_writer(&self, hid: &str, b: &Pair, a: &Pair) -> Option<Bump> {
        let runner = a.exec_s("runner_id")?;
        let fence = a.handoff.as_ref().and_then(|h| ex(h, "fence")?.as_i64())?;
        if b.holder() == Some(runner) && b.fence() == Some(fence) {
            return None;
        }
        self.bump_of(hid, runner, fence)
    }

    fn bump_for(&self, hid: &str, b: &Pair, at: f64) -> Bump {
        self.last_bump(hid, at).unwrap_or(Bump {
            holder: b.holder().unwrap_or("nobody").to_string(),
            fence: b.fence().unwrap_or(-1),
            seq: 0,
            at: b.lease().unwrap_or(at),
        })
    }

    /// R2 (docs/torn-states.md): a settled tombstone beside pending or
    /// running becomes orphaned, or the DLQ.
    fn repair_status(&mut self, hid: &str, b: &Pair, a: &Pair, at: f64) -> Verdict {
        if !self.rows.leader_live(self.held_at(at), &self.params) {
            return no_leader(hid, "the torn-state repair R2");
        }
        let mut st = self.model_led(hid, b);
        match ops::repair_torn(&mut st, "leader", hid, true, tm(at)) {
            Ok(_) => self.expect_status(hid, &st, a, "repair R2"),
            Err(e) => illegal(
                "torn-states.md R2",
                vec![format!("repair: {e}")],
                format!("{hid}: {:?} → {:?}", b.status(), a.status()),
            ),
        }
    }

    /// The status the model reached must be the row's.
    pub(super) fn expect_status(&self, hid: &str, st: &State, a: &Pair, op: &str) -> Verdict {
        let want = st.handoffs.get(hid).map(|h| h.status);
        if want == a.status() {
            return Verdict::Legal;
        }
        let (w, g) = (want.map_or("?", Status::as_str), a.status().map_or("?", Status::as_str));
        illegal(
            "§7.2 an orphan whose attempts are used up goes to the DLQ, else it is orphaned [dead-letter-queue]",
            vec![format!("{op}: the model's status after is {w}, the store's {g} (attempt {})", a.attempt())],
            format!("{hid} became {g}, the model says {w}"),
        )
    }

    /// §7.3 A budget kill needs a live leader term and a handoff over budget.
    fn kill(&mut self, hid: &str, b: &Pair, a: &Pair, at: f64) -> Verdict {
        if !self.rows.leader_live(self.held_at(at), &self.params) {
            return no_leader(hid, "a budget kill");
        }
        let mut st = self.model_led(hid, b);
        match ops::budget_kill(&mut st, "leader", hid, tm(at + self.params.skew_s)) {
            Ok(true) => self.expect_status(hid, &st, a, "budget kill"),
            Ok(false) => illegal(
                "§7.3 only a handoff over budget is budget-killed [supervisor-budget-kill]",
                vec![format!("budget kill: within budget at {at:.3} (steps, spend and wall clock since the claim)")],
                format!("{hid} failed as over budget while within its budget"),
            ),
            Err(e) => illegal(
                "§7.3 budget kill [supervisor-budget-kill]",
                vec![format!("budget kill: {e}")],
                format!("{hid}: {e}"),
            ),
        }
    }
}

/// `execution.error` of a DLQ by orphan or livelock.
fn is_dlq(err: &str) -> bool {
    err.contains("max_attempts") || err.starts_with("livelock")
}

fn no_leader(hid: &str, what: &str) -> Verdict {
    illegal(
        "§7.1 only the leader acts: a supervisor write needs a live leader term [leader-election]",
        vec![format!("{what}: no leadership row with a live term at the commit")],
        format!("{hid}: {what} committed while no leader term was live"),
    )
}

impl Judge {
    /// An ownership row appears: claim (§5.3), or a repair's tombstone (R3, R4).
    fn own_insert(&mut self, hid: &str, b: &Pair, a: &Pair, at: f64) -> Verdict {
        let holder = a.holder().unwrap_or_default().to_string();
        let fence = a.fence().unwrap_or(-1);
        if holder == ORPHANED {
            let ef = exec(b).and_then(|e| e.get("fence")).and_then(Value::as_i64).unwrap_or(0);
            if !self.rows.leader_live(self.held_at(at), &self.params) {
                return no_leader(hid, "the lost-row repair R3/R4");
            }
            if fence != ef + 1 {
                return illegal(
                    "torn-states.md R3/R4: the tombstone is inserted at execution.fence + 1 [fencing]",
                    vec![format!("repair: fence {} expected, {fence} inserted", ef + 1)],
                    format!("{hid}: tombstone at fence {fence}"),
                );
            }
            let mut st = self.model_led(hid, b);
            return match ops::repair_torn(&mut st, "leader", hid, true, tm(at)) {
                Ok(_) => self.expect_status(hid, &st, a, "repair R3/R4"),
                Err(e) => {
                    illegal("torn-states.md R3/R4", vec![format!("repair: {e}")], format!("{hid}: tombstone inserted"))
                }
            };
        }
        let ttl = a.own.as_ref().map_or(6.0, |o| {
            super::rows::f(o, "heartbeat_interval_s").unwrap_or(2.0) * super::rows::f(o, "max_missed").unwrap_or(3.0)
        });
        let mut st = b.model(hid, &self.rows, &self.params);
        let got = ops::claim(&mut st, hid, &holder, tm(ttl), tm(at));
        let rule = "§5.3 claim: only a pending handoff, fence 0 [claim-race]";
        match got {
            Ok(_) | Err(ops::OpError::BudgetExceeded) => {}
            Err(e) => {
                return illegal(
                    rule,
                    vec![format!("claim by {holder}: {e}")],
                    format!("{hid} claimed by {holder} in status {:?}", b.status()),
                )
            }
        }
        let runner = a.exec_s("runner_id");
        if fence != 0 || a.status() != Some(Status::Running) || runner != Some(&holder) || moved(b, a, "attempt") {
            return illegal(
                rule,
                vec![format!(
                    "claim by {holder}: fence 0, status running, runner_id {holder}, attempt kept; the store has fence {fence}, status {:?}, runner_id {runner:?}",
                    a.status()
                )],
                format!("{hid}: a claim's rows do not match the model's"),
            );
        }
        Verdict::Legal
    }

    /// The ownership row goes: release, complete, fail, budget kill, or the
    /// second half of a terminal write (R6).
    fn own_delete(&mut self, hid: &str, b: &Pair, a: &Pair, at: f64, seq: i64) -> Verdict {
        use Status::*;
        let (Some(sb), Some(sa)) = (b.status(), a.status()) else { return Verdict::Legal };
        let err = a.exec_s("error").unwrap_or_default().to_string();
        if sb == sa && matches!(sb, Completed | Failed | Suspended) {
            return Verdict::Legal; // a terminal write's second statement, or repair R6
        }
        if matches!(sa, Failed) && err.starts_with("budget") {
            return self.kill(hid, b, a, at);
        }
        if b.tomb() || !matches!((sb, sa), (Running, Pending | Completed | Failed)) {
            return illegal(
                "§4 / §5.5 the ownership row is deleted by release, complete, fail or a budget kill [wrong-state-operations]",
                vec![format!("release/complete/fail: by the holder of a running handoff; here {sb} → {sa} with {}", describe(b))],
                format!("{hid}: ownership deleted, {sb} → {sa}"),
            );
        }
        let (holder, fence) = (b.holder().unwrap_or_default().to_string(), b.fence().unwrap_or(-1));
        let lease = Lease { hid: hid.to_string(), holder: holder.clone(), fence };
        let st = b.model(hid, &self.rows, &self.params);
        let op = match sa {
            Pending => "release",
            Completed => "complete",
            _ => "fail",
        };
        match ops::ownership_check(&st, &lease, self.skewed(self.held_at(at))) {
            Ok(()) => {}
            Err(ops::OpError::LeaseLost) => {
                let bump = Bump { holder: holder.clone(), fence, seq: 0, at: b.lease().unwrap_or(at) };
                let msg = format!("{op} of {hid} by {holder} (fence {fence}) after its lease ran out");
                return self.stale(
                    hid,
                    "§5.2 LeaseLost: a write needs a live lease [lease-expiry-lease-lost]",
                    seq,
                    at,
                    bump,
                    msg,
                );
            }
            Err(e) => {
                return illegal(
                    "§5.2 the ownership check [fencing]",
                    vec![format!("{op}: {e}")],
                    format!("{hid}: {op} refused by the model"),
                )
            }
        }
        if sa == Failed && !err.starts_with("schema") {
            return illegal(
                "§6.3 a worker fails a handoff only for a result that violates output_schema [no-untyped-results]",
                vec![format!("fail: error must start with \"schema validation\", got {err:?}")],
                format!("{hid} failed by its holder with {err:?}"),
            );
        }
        if sa == Completed && a.exec_s("runner_id").is_some_and(|r| r != holder) {
            return illegal(
                "§6.3 the holder completes [no-lost-results]",
                vec![format!("complete by {holder}: runner_id says {:?}", a.exec_s("runner_id"))],
                format!("{hid} completed as another runner than the holder"),
            );
        }
        Verdict::Legal
    }
}
