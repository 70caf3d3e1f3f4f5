//! Shrinking a diverging sequence: drop steps (halves, then smaller
//! chunks, then single steps), simplify steps (fewer racers, fresh
//! tokens, smaller numbers), merge workers and handoffs — keeping a
//! candidate only while the *same* divergence (its key) persists, each
//! candidate run against a fresh store.

use super::compare::Divergence;
use super::gen::{Sequence, Step};
use crate::check::Check;
use std::time::Instant;

/// Limits of one shrink.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Candidate runs at most.
    pub runs: usize,
    /// Stop by then.
    pub until: Instant,
}

/// The smallest sequence found, its divergence, and the candidates tried.
#[derive(Debug, Clone)]
pub struct Shrunk {
    /// The minimal sequence.
    pub seq: Sequence,
    /// Its divergence.
    pub divergence: Divergence,
    /// Candidate runs.
    pub runs: usize,
}

struct Shrinker<'f> {
    run: &'f mut dyn FnMut(&Sequence) -> Check<Option<Divergence>>,
    best: Sequence,
    div: Divergence,
    runs: usize,
    limits: Limits,
}

impl Shrinker<'_> {
    fn spent(&self) -> bool {
        self.runs >= self.limits.runs || Instant::now() >= self.limits.until
    }

    /// Try `cand`: keep it if it still shows the same divergence.
    fn try_(&mut self, cand: Sequence) -> Check<bool> {
        if cand == self.best || self.spent() {
            return Ok(false);
        }
        self.runs += 1;
        match (self.run)(&cand)? {
            Some(d) if d.same_as(&self.div) && !d.timing => {
                let mut cand = cand;
                cand.steps.truncate(d.step + 1);
                self.best = cand;
                self.div = d;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn drop_chunks(&mut self) -> Check<bool> {
        let mut any = false;
        let mut n = self.best.steps.len() / 2;
        while n >= 1 && !self.spent() {
            let mut i = 0;
            while i < self.best.steps.len() && !self.spent() {
                let mut c = self.best.clone();
                let end = (i + n).min(c.steps.len());
                c.steps.drain(i..end);
                if self.try_(c)? {
                    any = true;
                } else {
                    i += n;
                }
            }
            n /= 2;
        }
        Ok(any)
    }

    fn simplify(&mut self) -> Check<bool> {
        let mut any = false;
        let mut i = 0;
        while i < self.best.steps.len() && !self.spent() {
            for s in simpler(&self.best.steps[i]) {
                let mut c = self.best.clone();
                c.steps[i] = s;
                if self.try_(c)? {
                    any = true;
                    break;
                }
            }
            i += 1;
        }
        Ok(any)
    }

    fn merge(&mut self) -> Check<bool> {
        let mut any = false;
        for w in (1..self.best.workers).rev() {
            let c = map_workers(&self.best, w);
            any |= self.try_(c)?;
        }
        if self.best.handoffs.len() > 1 {
            let mut c = self.best.clone();
            c.handoffs.pop();
            let n = c.handoffs.len() as u8;
            for s in &mut c.steps {
                map_h(s, |h| h % n);
            }
            any |= self.try_(c)?;
        }
        Ok(any)
    }
}

/// Shrink `seq`, whose run showed `div`; `run` runs a candidate on a fresh store.
pub fn shrink(
    seq: &Sequence,
    div: Divergence,
    limits: Limits,
    run: &mut dyn FnMut(&Sequence) -> Check<Option<Divergence>>,
) -> Check<Shrunk> {
    let mut best = seq.clone();
    best.steps.truncate(div.step + 1);
    let mut s = Shrinker { run, best, div, runs: 0, limits };
    loop {
        let a = s.drop_chunks()?;
        let b = s.merge()?;
        let c = s.simplify()?;
        if !(a || b || c) || s.spent() {
            break;
        }
    }
    Ok(Shrunk { seq: s.best, divergence: s.div, runs: s.runs })
}

fn map_h(s: &mut Step, f: impl Fn(u8) -> u8) {
    match s {
        Step::Dispatch { h }
        | Step::Tampered { h, .. }
        | Step::ClaimRace { h, .. }
        | Step::Oversize { h }
        | Step::Claim { h, .. }
        | Step::Heartbeat { h, .. }
        | Step::Checkpoint { h, .. }
        | Step::NoteStep { h, .. }
        | Step::NoteSpend { h, .. }
        | Step::Complete { h, .. }
        | Step::Release { h, .. }
        | Step::Ack { h }
        | Step::Recover { h, .. }
        | Step::Suspend { h }
        | Step::RequestApproval { h, .. }
        | Step::Decide { h, .. }
        | Step::Await { h, .. }
        | Step::BadId { h, .. }
        | Step::CompleteIntegral { h, .. }
        | Step::Resume { h, .. }
        | Step::Ship { h, .. }
        | Step::Effect { h, .. }
        | Step::Capability { h, .. }
        | Step::Retune { h, .. }
        | Step::Crash { h }
        | Step::Activity { h, .. }
        | Step::LockedWrite { h, .. } => *h = f(*h),
        Step::Advance { .. }
        | Step::Scan { .. }
        | Step::Lead { .. }
        | Step::Canonical { .. }
        | Step::OpenRace { .. }
        | Step::NewerSchema => {}
    }
}

/// `seq` with worker `w` replaced by `w0` (racers deduplicated).
fn map_workers(seq: &Sequence, from: u8) -> Sequence {
    let mut c = seq.clone();
    let to = |x: &mut u8| {
        if *x == from {
            *x = 0
        }
    };
    for s in &mut c.steps {
        match s {
            Step::Claim { w, .. }
            | Step::Heartbeat { w, .. }
            | Step::Checkpoint { w, .. }
            | Step::NoteStep { w, .. }
            | Step::NoteSpend { w, .. }
            | Step::Complete { w, .. }
            | Step::Release { w, .. }
            | Step::RequestApproval { w, .. }
            | Step::BadId { w, .. }
            | Step::CompleteIntegral { w, .. }
            | Step::Effect { w, .. }
            | Step::Capability { w, .. }
            | Step::Activity { w, .. }
            | Step::LockedWrite { w, .. } => to(w),
            Step::Recover { ws, .. } | Step::ClaimRace { ws, .. } => {
                ws.iter_mut().for_each(to);
                let mut seen = Vec::new();
                ws.retain(|x| {
                    if seen.contains(x) {
                        false
                    } else {
                        seen.push(*x);
                        true
                    }
                });
            }
            _ => {}
        }
    }
    if from + 1 == c.workers {
        c.workers -= 1;
    }
    c
}

/// Simpler variants of one step, simplest first.
fn simpler(s: &Step) -> Vec<Step> {
    let mut out = Vec::new();
    match s {
        Step::Recover { h, ws } if ws.len() > 1 => {
            for i in 0..ws.len() {
                let mut v = ws.clone();
                v.remove(i);
                out.push(Step::Recover { h: *h, ws: v });
            }
        }
        Step::Heartbeat { h, w, stale: true } => out.push(Step::Heartbeat { h: *h, w: *w, stale: false }),
        Step::Checkpoint { h, w, stale, s } => {
            if *stale {
                out.push(Step::Checkpoint { h: *h, w: *w, stale: false, s: *s });
            }
            if *s != 0 {
                out.push(Step::Checkpoint { h: *h, w: *w, stale: *stale, s: 0 });
            }
        }
        Step::NoteStep { h, w, n } if *n > 0 => {
            out.push(Step::NoteStep { h: *h, w: *w, n: 0 });
            out.push(Step::NoteStep { h: *h, w: *w, n: n - 1 });
        }
        Step::NoteSpend { h, w, quarters } if *quarters > 0 => {
            out.push(Step::NoteSpend { h: *h, w: *w, quarters: 0 });
            out.push(Step::NoteSpend { h: *h, w: *w, quarters: quarters - 1 });
        }
        Step::Advance { secs } => {
            out.extend([1, 3, 7].into_iter().filter(|x| x < secs).map(|secs| Step::Advance { secs }));
        }
        Step::Scan { s } if *s > 0 => out.push(Step::Scan { s: 0 }),
        Step::Tampered { h, .. } | Step::Oversize { h } => out.push(Step::Dispatch { h: *h }),
        Step::ClaimRace { h, ws } => {
            if ws.len() > 1 {
                for i in 0..ws.len() {
                    let mut v = ws.clone();
                    v.remove(i);
                    out.push(Step::ClaimRace { h: *h, ws: v });
                }
            }
            out.extend(ws.first().map(|w| Step::Claim { h: *h, w: *w }));
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::gen::{sequence, Features};

    /// A fake implementation that diverges at the first claim by any
    /// worker of a handoff dispatched before: shrinking must find the two
    /// steps, with worker 0 and one handoff.
    fn fake(s: &Sequence) -> Check<Option<Divergence>> {
        let mut dispatched = std::collections::BTreeSet::new();
        for (i, st) in s.steps.iter().enumerate() {
            match st {
                Step::Dispatch { h } => {
                    dispatched.insert(*h % s.handoffs.len() as u8);
                }
                Step::Claim { h, .. } if dispatched.contains(&(*h % s.handoffs.len() as u8)) => {
                    let d = Divergence {
                        step: i,
                        what: "reply of claim".into(),
                        key: "reply of claim: ok vs StateError".into(),
                        want: "ok".into(),
                        got: "StateError".into(),
                        rule: "§5.3".into(),
                        timing: false,
                    };
                    return Ok(Some(d));
                }
                _ => {}
            }
        }
        Ok(None)
    }

    #[test]
    fn shrinks_to_the_two_steps_that_matter() {
        let f = Features::all();
        let (seq, d) = (0..50)
            .find_map(|i| {
                let s = sequence(11, i, 40, f);
                let d = fake(&s).unwrap()?;
                (d.step >= 5 && s.workers > 1).then_some((s, d))
            })
            .expect("a sequence with a late claim");
        let limits = Limits { runs: 500, until: Instant::now() + std::time::Duration::from_secs(30) };
        let out = shrink(&seq, d, limits, &mut fake).unwrap();
        assert_eq!(out.seq.steps.len(), 2, "{:?}", out.seq.steps);
        assert!(matches!(out.seq.steps[0], Step::Dispatch { h: 0 }), "{:?}", out.seq.steps);
        assert!(matches!(out.seq.steps[1], Step::Claim { h: 0, w: 0 }), "{:?}", out.seq.steps);
        assert_eq!(out.seq.handoffs.len(), 1);
        assert_eq!(out.divergence.step, 1);
    }

    #[test]
    fn a_different_divergence_is_not_kept() {
        // Every candidate shows another key: nothing is dropped.
        let seq = sequence(3, 0, 10, Features::default());
        let d = Divergence {
            step: seq.steps.len() - 1,
            what: "w".into(),
            key: "mine".into(),
            want: "a".into(),
            got: "b".into(),
            rule: "r".into(),
            timing: false,
        };
        let mut other =
            |_: &Sequence| -> Check<Option<Divergence>> { Ok(Some(Divergence { key: "other".into(), ..d.clone() })) };
        let limits = Limits { runs: 100, until: Instant::now() + std::time::Duration::from_secs(10) };
        let out = shrink(&seq, d.clone(), limits, &mut other).unwrap();
        assert_eq!(out.seq, seq);
    }

    #[test]
    fn a_reply_refused_another_way_is_the_same_divergence() {
        let d = |key: &str| Divergence {
            step: 0,
            what: "reply of checkpoint".into(),
            key: key.into(),
            want: "FencingError".into(),
            got: "x".into(),
            rule: "r".into(),
            timing: false,
        };
        let lost = d("reply of checkpoint: FencingError vs LeaseLost");
        assert!(lost.same_as(&d("reply of checkpoint: FencingError vs ok")));
        assert!(!lost.same_as(&d("reply of checkpoint: ok vs LeaseLost")));
        assert!(!lost.same_as(&d("reply of heartbeat: FencingError vs ok")));
        assert!(!d("status").same_as(&d("fence")));
    }
}
