//! Running one sequence against an implementation, on a fresh store,
//! beside the model: each step's replies, then the store as the runner
//! reads it, against the model's after the same operation.

use super::compare::{self, Divergence};
use super::gen::{Family, Sequence, Step};
use super::world::{result_of, state_of, World};
use crate::assertions::{core::race, spec_with};
use crate::check::{Check, Fail};
use crate::client::{ErrorReply, Reply};
use crate::protocol::feature;
use crate::suite::Ctx;
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// A reply within this many ms of a deadline of the model may have seen
/// the other side of it: such a divergence is a race with the clock.
const MARGIN_MS: i64 = 300;
/// Bytes of padding that take an envelope over the runner's
/// `DHP_MAX_ENVELOPE_BYTES` (262144).
const OVERSIZE_PAD: usize = 300_000;

/// How one sequence ended.
#[derive(Debug, Clone)]
pub struct SeqResult {
    /// The first divergence, if any.
    pub divergence: Option<Divergence>,
    /// The families whose steps ran (a request was sent) before it.
    pub exercised: BTreeSet<Family>,
    /// Steps run.
    pub steps_run: usize,
}

/// The `build_envelope` arguments of handoff `h` of `seq`.
fn envelope_spec(seq: &Sequence, h: usize) -> Value {
    let b = &seq.handoffs[h];
    let budget = json!({
        "max_steps": b.max_steps,
        "max_spend_usd": b.max_spend_quarters as f64 * 0.25,
        "max_wallclock_s": b.max_wallclock_s as f64,
        "max_attempts": b.max_attempts,
    });
    let mut extra = json!({"budget": budget, "inputs": super::ids::tricky_inputs(1000 + h as i64)});
    if super::gen_extra::draft4_handoff(h as u8) {
        extra["output_schema"] = super::gen_extra::draft4_schema();
    }
    if super::gen_extra::declares_capabilities(h as u8) {
        extra["capabilities"] = json!({"network": ["api.example.com"]});
    }
    spec_with(1000 + h as i64, extra)
}

/// `env` with its inputs changed: both hashes stale (`how` 0), the input
/// hash re-bound under the old id (1), or the id recomputed over a stale
/// input hash (2) — the three cases of the core assertion no-crossed-inputs.
fn tampered(mut env: Value, how: u8) -> Check<Value> {
    let oracle = |e: dhp_oracle::OracleError| Fail::Errored(e.to_string());
    env["task"]["inputs"]["inline"]["n"] = json!(-7);
    match how {
        1 => env["task"]["input_hash"] = json!(dhp_oracle::input_hash(&env["task"]["inputs"]).map_err(oracle)?),
        2 => {
            let id = dhp_oracle::handoff_id(&env).ok_or_else(|| Fail::Errored("no spec to hash".into()))?;
            env["handoff_id"] = json!(id.map_err(oracle)?);
        }
        _ => {}
    }
    Ok(env)
}

/// A step run from `before` to `after` (ms) may have seen the other side
/// of a model deadline `d`: the implementation's is in `[d, d + lag]`.
fn near_deadline(deadlines: &[i64], before: i64, after: i64, lag: i64) -> bool {
    deadlines.iter().any(|d| *d + lag >= before - MARGIN_MS && *d <= after + MARGIN_MS)
}

fn ms(secs: f64) -> i64 {
    (secs * 1000.0).round() as i64
}

/// One sequence step by step on a fresh store named `name`.
pub fn run_sequence(cx: &Ctx<'_>, seq: &Sequence, name: &str) -> Check<SeqResult> {
    let root = cx.root(name)?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    // The file as open left it, before any other request (journal-delete
    // switches back at the next one).
    let mut at_open = match cx.store(&root)? {
        Some(db) => super::ids::stored(&db, &World::new(&[]), &[])?,
        None => None,
    };
    let mut envs = Vec::new();
    for h in 0..seq.handoffs.len() {
        envs.push(m.build(envelope_spec(seq, h))?);
    }
    let hids = envs.iter().map(|e| e["handoff_id"].as_str().unwrap_or_default().to_string()).collect();
    let mut world = World::with_hids(&seq.handoffs, hids);
    let mut refused = BTreeSet::new();
    let t0 = cx.now();
    world.origin = t0;
    let mut out = SeqResult { divergence: None, exercised: BTreeSet::new(), steps_run: 0 };
    // The model stamps a step's effects at `before`; the implementation at
    // the moment it handled the request, up to the step's whole length
    // later (a loaded machine, fresh racers started): so its deadlines
    // (lease ends, terms, timeouts) may fall that much after the model's.
    // The longest such step so far bounds how much.
    let mut lag = 0i64;
    for (i, step) in seq.steps.iter().enumerate() {
        let before = ms(cx.now() - t0);
        let deadlines = world.deadlines();
        world.now = before;
        let mut r = Runner { cx, m: &mut m, root: &root, world: &mut world, envs: &envs, name, i, fired: None };
        let replies = r.send(step, &mut refused)?;
        // a step that starts processes first is judged from when its
        // request went out, not from the processes' start-up
        let fired = r.fired.map(|t| ms(t - t0));
        let after = ms(cx.now() - t0);
        if !matches!(step, Step::Advance { .. }) {
            // (a clock move is no delay: it moves both sides' clocks)
            lag = lag.max(after - before);
        }
        let timing = near_deadline(&deadlines, before, after, lag);
        // The racer whose claim or recover stood: an ok, or a claim of
        // over-budget work (it stands, and answers BudgetExceeded).
        let stood = |r: &Got| r.as_ref().map_or_else(|e| e.kind == "BudgetExceeded", |_| true);
        let winner = replies.iter().find(|(_, r)| stood(r)).map(|(w, _)| *w);
        world.now = fired.unwrap_or(before);
        // a loaded machine answers late: what the implementation stamped
        // may be as late as the step took
        // (a clock move writes nothing)
        world.step_ms = if matches!(step, Step::Advance { .. }) { 0 } else { after - world.now };
        let expects = world.apply(step, winner);
        if !replies.is_empty() {
            out.exercised.insert(step.family());
        }
        out.steps_run = i + 1;
        if let Step::RequestApproval { h, .. } = step {
            if cx.has(feature::APPROVALS) {
                adopt_approval_ids(&mut m, &root, &mut world, *h)?;
            }
        }
        let mut io = super::run_extra::Io { cx, m: &mut m, root: &root, name, i };
        let found = match compare::replies(step, &replies, &expects).or(at_open.take()) {
            Some(d) => Some(d),
            None => own_checks(&mut io, &mut world, step, &replies, &envs)?,
        };
        let found = match found {
            Some(d) => Some(d),
            None => compare::observe(cx, &mut m, &root, &mut world, &refused, lag)?,
        }
        .map(|d| d.at(i, timing));
        if found.is_some() {
            out.divergence = found;
            return Ok(out);
        }
    }
    Ok(out)
}

/// What the runner checks from what it reads itself, beyond the
/// model's status: ids and stored text, bundles, logs, effects.
fn own_checks(
    io: &mut super::run_extra::Io<'_, '_>,
    world: &mut World,
    step: &Step,
    replies: &[(u8, Got)],
    envs: &[Value],
) -> Check<Option<Divergence>> {
    if let Some(d) = super::run_extra::after(io, world, step, replies)? {
        return Ok(Some(d));
    }
    if let Some(d) = super::ids::built(world, envs) {
        return Ok(Some(d));
    }
    if let Some(db) = io.cx.store(io.root)? {
        if let Some(d) = super::ids::stored(&db, world, envs)? {
            return Ok(Some(d));
        }
    }
    super::ids::loaded(io.m, io.root, world, step)
}

/// After a request for an approval: the implementation's ids of `h`'s
/// approvals replace the model's placeholders, oldest first.
fn adopt_approval_ids(m: &mut crate::client::Adapter, root: &str, world: &mut World, h: u8) -> Check {
    let hid = world.hid(h).to_string();
    // a handoff that is not stored has no approvals to adopt
    let Ok(v) = m.try_op("approvals", json!({"root": root, "hid": hid}))? else { return Ok(()) };
    let ids: Vec<String> = v["approvals"]
        .as_array()
        .map(|a| a.iter().filter_map(|x| x["approval_id"].as_str().map(String::from)).collect())
        .unwrap_or_default();
    let mine = world.approvals.entry(h).or_default();
    for (k, real) in ids.iter().enumerate() {
        if let Some(old) = mine.get(k).cloned() {
            if old != *real {
                if let Some(a) = world.s.approvals.remove(&old) {
                    world.s.approvals.insert(real.clone(), a);
                }
                mine[k] = real.clone();
            }
        }
    }
    Ok(())
}

struct Runner<'r, 'a> {
    cx: &'r Ctx<'a>,
    m: &'r mut crate::client::Adapter,
    root: &'r str,
    world: &'r mut World,
    envs: &'r [Value],
    name: &'r str,
    i: usize,
    /// When a step that starts processes sent its request (protocol clock).
    fired: Option<f64>,
}

/// A reply as the comparison reads it: ok with its result, or an error.
pub type Got = Result<Value, ErrorReply>;

impl Runner<'_, '_> {
    fn token(&self, h: u8, w: u8, stale: bool) -> Value {
        json!({"root": self.root, "worker": format!("w{w}"), "hid": self.world.hid(h),
               "fence": self.world.presented_fence(h, w, stale)})
    }

    fn with(&self, h: u8, w: u8, stale: bool, key: &str, v: Value) -> Value {
        let mut a = self.token(h, w, stale);
        a[key] = v;
        a
    }

    fn call(&mut self, op: &str, args: Value) -> Check<Vec<(u8, Got)>> {
        Ok(vec![(0, self.m.try_op(op, args)?)])
    }

    fn env(&self, h: u8) -> Value {
        self.envs[usize::from(h) % self.envs.len()].clone()
    }

    /// Send the requests of `step`; the replies, keyed by worker for a race.
    fn send(&mut self, step: &Step, refused: &mut BTreeSet<String>) -> Check<Vec<(u8, Got)>> {
        let root = self.root.to_string();
        if super::run_extra::handles(step) {
            let mut io = super::run_extra::Io { cx: self.cx, m: self.m, root: self.root, name: self.name, i: self.i };
            return super::run_extra::send(&mut io, self.world, step);
        }
        match step {
            Step::Dispatch { h } => self.call("dispatch", json!({"root": root, "envelope": self.env(*h)})),
            Step::Tampered { h, how } => {
                let env = tampered(self.env(*h), *how)?;
                if *how == 2 {
                    refused.insert(env["handoff_id"].as_str().unwrap_or_default().to_string());
                }
                self.call("dispatch", json!({"root": root, "envelope": env}))
            }
            Step::Oversize { h } => {
                let spec = json!({"kind": "t", "inputs": {"inline": {"n": h, "pad": "p".repeat(OVERSIZE_PAD)}},
                                  "output_schema": crate::assertions::schema()});
                let env = self.m.build(spec)?;
                refused.insert(env["handoff_id"].as_str().unwrap_or_default().to_string());
                self.call("dispatch", json!({"root": root, "envelope": env}))
            }
            Step::Claim { h, w } => {
                self.call("claim", json!({"root": root, "worker": format!("w{w}"), "hid": self.world.hid(*h)}))
            }
            Step::Heartbeat { h, w, stale } => self.call("heartbeat", self.token(*h, *w, *stale)),
            Step::Checkpoint { h, w, stale, s } => {
                self.call("checkpoint", self.with(*h, *w, *stale, "state", state_of(*h, *s)))
            }
            Step::NoteStep { h, w, n } => self.call("note_step", self.with(*h, *w, false, "n", json!(n))),
            Step::NoteSpend { h, w, quarters } => {
                self.call("note_spend", self.with(*h, *w, false, "usd", json!(*quarters as f64 * 0.25)))
            }
            Step::Complete { h, w, valid } => {
                self.call("complete", self.with(*h, *w, false, "result", result_of(*h, *valid)))
            }
            Step::Release { h, w } => self.call("release", self.with(*h, *w, false, "reason", json!("explore"))),
            Step::Ack { h } => self.call("ack", json!({"root": root, "hid": self.world.hid(*h)})),
            Step::Advance { secs } => self.advance(*secs),
            Step::Scan { s } => self.call("scan", json!({"root": root, "supervisor": format!("s{s}")})),
            Step::Recover { h, ws } => self.race("recover", *h, ws),
            Step::ClaimRace { h, ws } => self.race("claim", *h, ws),
            Step::Crash { h } => self.crash(*h),
            Step::Suspend { h } => {
                let path = self.cx.path(&format!("{}-bundle-{}.json", self.name, self.i));
                self.call("suspend", json!({"root": root, "hid": self.world.hid(*h), "path": path}))
            }
            Step::RequestApproval { h, w, class, timeout_s } => {
                let mut a = self.with(*h, *w, false, "action_class", json!(class));
                a["details"] = json!({"step": self.i});
                a["timeout_s"] = json!(f64::from(*timeout_s));
                self.call("request_approval", a)
            }
            Step::Decide { h, nth, approve } => {
                let Some(ids) = self.world.approvals.get(h).filter(|v| !v.is_empty()) else { return Ok(Vec::new()) };
                let id = ids[usize::from(*nth) % ids.len()].clone();
                self.call("decide_approval", json!({"root": root, "approval_id": id, "approved": approve}))
            }
            _ => Ok(Vec::new()),
        }
    }

    /// Move the protocol clock: with `clock-control` the offset every
    /// request carries; otherwise the time-control operations (`expire_lease`
    /// of each live lease, `expire_leadership`) and a short real wait.
    fn advance(&mut self, secs: u32) -> Check<Vec<(u8, Got)>> {
        if self.cx.controls_clock() {
            self.cx.wait(f64::from(secs));
            return Ok(vec![(0, Ok(json!({})))]);
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        if secs * 1000 > super::world::LEASE_TTL_MS as u32 {
            let hids = self.world.expire_leases();
            for hid in hids {
                self.m.expire_lease(self.root, &hid)?;
            }
        }
        if secs * 1000 > super::world::LEADER_TTL_MS as u32 {
            self.world.expire_leadership();
            self.m.expire_leadership(self.root)?;
        }
        Ok(vec![(0, Ok(json!({})))])
    }

    /// A fresh process publishes the crash worker's liveness token (before
    /// its claim, as ADAPTERS.md `liveness_publish` asks), claims `h`, and
    /// is SIGKILLed; the kill waits until the process is reaped.
    fn crash(&mut self, h: u8) -> Check<Vec<(u8, Got)>> {
        let worker = super::focus::crash_worker();
        let mut p = self.cx.fresh()?;
        p.open(self.root)?;
        p.op("liveness_publish", json!({"root": self.root, "worker": worker}))?;
        self.fired = Some(self.cx.now());
        let got = p.try_op("claim", json!({"root": self.root, "worker": worker, "hid": self.world.hid(h)}))?;
        p.kill();
        Ok(vec![(0, got)])
    }

    /// One claimer or recoverer in this process, or several in fresh
    /// processes released at one instant.
    fn race(&mut self, op: &str, h: u8, ws: &[u8]) -> Check<Vec<(u8, Got)>> {
        let hid = self.world.hid(h).to_string();
        let args = |w: u8| json!({"root": self.root, "worker": format!("w{w}"), "hid": hid});
        if ws.len() <= 1 {
            let w = ws.first().copied().unwrap_or(0);
            return Ok(vec![(w, self.m.try_op(op, args(w))?)]);
        }
        let mut racers = self.cx.fresh_many(ws.len())?;
        for r in racers.iter_mut() {
            r.open(self.root)?;
        }
        self.fired = Some(self.cx.now());
        let replies = race(&mut racers, op, |i| args(ws[i]))?;
        let mut out = Vec::new();
        for (w, r) in ws.iter().zip(replies) {
            match r {
                Reply::Ok(v) => out.push((*w, Ok(v))),
                Reply::Err(e) => out.push((*w, Err(e))),
            }
        }
        if out.len() != ws.len() {
            return Err(Fail::Errored("a racer did not answer".into()));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::near_deadline;

    #[test]
    fn a_deadline_the_implementation_may_have_set_later_is_a_clock_race() {
        // the model's lease ended 1 s before this step; the step that granted
        // it took 1.5 s, so the implementation's may end during this one
        // (seed 2 of explore::ours_passes_twenty_seeds under load: LeaseLost
        // in the model, BudgetExceeded from the live lease of dhp-rs)
        assert!(near_deadline(&[9_000], 10_000, 10_050, 1_500));
        assert!(!near_deadline(&[9_000], 10_000, 10_050, 0), "no lag: well past");
        assert!(!near_deadline(&[9_000], 10_000, 10_050, 600), "600 ms of lag ends 100 ms short of the margin");
        // a deadline ahead of the step: within the margin or not
        assert!(near_deadline(&[10_300], 10_000, 10_050, 0));
        assert!(
            !near_deadline(&[10_400], 10_000, 10_050, 5_000),
            "the model's is the earliest the implementation's can be"
        );
    }

    #[test]
    fn a_stamp_may_be_as_late_as_the_longest_step() {
        use super::super::compare::late;
        assert_eq!(late(0, 1500), 1500, "a quick sequence: the fixed slack");
        assert_eq!(late(2_000, 1500), 2_300, "a 2 s step: its length and the margin");
    }
}
