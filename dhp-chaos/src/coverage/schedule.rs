//! The harness's own determinism: the fault schedule (the interval before
//! each fault and the kind drawn, plus the toxic or length some kinds draw
//! from the same stream) is recorded step by step as `schedule` events, and
//! the checker re-derives it from the seed alone and compares the two byte
//! for byte (FoundationDB re-runs a share of its seeds for the same
//! reason). A draw added where the OS decides whether it happens, or a
//! second consumer of the stream, shows here as a mismatch — a harness
//! error, since the seed would no longer replay the schedule. Re-deriving
//! costs nothing, so every round that recorded its schedule is checked.

use crate::config::FaultKind;
use crate::hist::Ev;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Draws some kinds make from the schedule's stream after their kind.
pub const EXTRA_TOXIC: &str = "toxic";
/// `disk-full`: its length, 0.2–1.5 s.
pub const EXTRA_DISK: &str = "disk";
/// `store-full`: its length, 0.3–2 s.
pub const EXTRA_STORE: &str = "store";

/// The result of re-deriving a round's schedule.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ScheduleCheck {
    /// Steps recorded (the first interval, then one per fault time).
    pub steps: u64,
    /// The re-derived steps equal the recorded ones byte for byte.
    pub matched: bool,
    /// The first step that differs: recorded vs re-derived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_difference: Option<String>,
}

/// The interval before the next fault.
pub fn interval(rng: &mut StdRng, (a, b): (f64, f64)) -> f64 {
    if b > a {
        rng.gen_range(a..=b)
    } else {
        a
    }
}

/// The kind of the next fault, by weight.
pub fn pick(rng: &mut StdRng, mix: &[(FaultKind, f64)]) -> FaultKind {
    let total: f64 = mix.iter().map(|(_, w)| w).sum();
    let mut x = rng.gen_range(0.0..total);
    for (k, w) in mix {
        if x < *w {
            return *k;
        }
        x -= w;
    }
    mix.last().map(|(k, _)| *k).unwrap_or(FaultKind::KillWorker)
}

/// One step as recorded (and as re-derived).
pub fn step(n: u64, interval: f64, drawn: Option<FaultKind>, extra: Option<&str>) -> Value {
    json!({"step": n, "interval": interval, "drawn": drawn.map(FaultKind::name), "extra": extra})
}

/// Re-derive the steps of `recorded` from `seed` (their `extra` says which
/// further draws each step's fault made, as the round's resources allowed).
fn derive(seed: u64, cfg: &Value, recorded: &[Value]) -> Option<Vec<Value>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let iv = cfg["fault_interval_s"].as_array()?;
    let (a, b) = (iv.first()?.as_f64()?, iv.get(1)?.as_f64()?);
    let mix: Vec<(FaultKind, f64)> = serde_json::from_value(cfg["fault_mix"].clone()).ok()?;
    let mut out = Vec::new();
    for (n, r) in recorded.iter().enumerate() {
        let n = n as u64;
        if n == 0 {
            out.push(step(0, interval(&mut rng, (a, b)), None, None));
            continue;
        }
        let i = interval(&mut rng, (a, b));
        let k = pick(&mut rng, &mix);
        let extra = r["extra"].as_str();
        match extra {
            Some(EXTRA_TOXIC) => {
                crate::proxy::Toxic::draw(&mut rng);
                rng.gen_range(0.2..=1.5);
            }
            Some(EXTRA_DISK) => {
                rng.gen_range(0.2..=1.5);
            }
            Some(EXTRA_STORE) => {
                rng.gen_range(0.3..=2.0);
            }
            _ => {}
        }
        out.push(step(n, i, Some(k), extra));
    }
    Some(out)
}

/// Check a round's recorded schedule against its seed; `None` when it
/// recorded none (a `--hosts` round draws its own; a round before this check).
pub(crate) fn check(cfg: &Value, events: &[&Ev]) -> Option<ScheduleCheck> {
    let recorded: Vec<Value> = events
        .iter()
        .map(|e| json!({"step": e.u("step"), "interval": e.get("interval"), "drawn": e.get("drawn"), "extra": e.get("extra")}))
        .collect();
    check_steps(cfg, &recorded)
}

fn check_steps(cfg: &Value, recorded: &[Value]) -> Option<ScheduleCheck> {
    if recorded.is_empty() {
        return None;
    }
    let seed = cfg["seed"].as_u64()?;
    let derived = derive(seed, cfg, recorded)?;
    let bytes = |v: &Value| serde_json::to_vec(v).unwrap_or_default();
    let first = recorded.iter().zip(&derived).find(|(r, d)| bytes(r) != bytes(d));
    Some(ScheduleCheck {
        steps: recorded.len() as u64,
        matched: first.is_none(),
        first_difference: first.map(|(r, d)| format!("recorded {r}, re-derived from seed {seed}: {d}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> Value {
        json!({"seed": 31, "fault_interval_s": [0.15, 0.55],
               "fault_mix": [["kill-worker", 50.0], ["link", 10.0], ["pause", 12.0]]})
    }

    /// The driver's draws for `n` faults; `stray` adds a draw after fault 3
    /// (a consumer of the stream the record does not know about).
    fn drive(n: u64, stray: bool) -> Vec<Value> {
        let c = cfg();
        let mix: Vec<(FaultKind, f64)> = serde_json::from_value(c["fault_mix"].clone()).unwrap();
        let mut rng = StdRng::seed_from_u64(31);
        let mut out = vec![step(0, interval(&mut rng, (0.15, 0.55)), None, None)];
        for i in 1..=n {
            let iv = interval(&mut rng, (0.15, 0.55));
            let k = pick(&mut rng, &mix);
            let extra = (k == FaultKind::Link).then_some(EXTRA_TOXIC);
            if extra.is_some() {
                crate::proxy::Toxic::draw(&mut rng);
                rng.gen_range(0.2..=1.5);
            }
            if stray && i == 3 {
                rng.gen_bool(0.5);
            }
            out.push(step(i, iv, Some(k), extra));
        }
        out
    }

    #[test]
    fn the_schedule_is_re_derived_from_the_seed_byte_for_byte() {
        let ok = check_steps(&cfg(), &drive(40, false)).unwrap();
        assert_eq!((ok.steps, ok.matched, ok.first_difference), (41, true, None));
        let bad = check_steps(&cfg(), &drive(40, true)).unwrap();
        assert!(!bad.matched);
        assert!(bad.first_difference.unwrap().starts_with("recorded {\"step\":4,"));
        let mut other_seed = cfg();
        other_seed["seed"] = json!(32);
        assert!(!check_steps(&other_seed, &drive(5, false)).unwrap().matched);
    }
}
