//! Shrinking a failing round (`dhp-chaos shrink RUN_DIR`): its fault
//! schedule becomes data — a list of faults at times from the start of the
//! fault phase — that a round replays instead of drawing (`--schedule
//! FILE`). The shrinker removes faults, handoffs, chunks and extra
//! processes while the round still fails with the same invariant in every
//! one of its tries (so what it keeps reproduces); this
//! module holds the file format and the reduction steps, `cli/shrink.rs`
//! runs the replays.

use crate::check::RoundReport;
use crate::config::{FaultKind, RoundConfig};
use crate::error::{Error, Result};
use crate::hist;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The file format's name and version.
pub const FORMAT: &str = "dhp-chaos-schedule/1";

/// One fault of a scripted schedule.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ScriptedFault {
    /// Seconds from the start of the fault phase.
    pub at: f64,
    /// What to inject (its victim is drawn as in any round, from the seed).
    pub kind: FaultKind,
}

/// A schedule file: the round's configuration with its script, and what
/// the shrinker found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScheduleFile {
    /// [`FORMAT`].
    pub format: String,
    /// The round to replay (`config.script` holds the faults).
    pub config: RoundConfig,
    /// The invariant the round fails.
    pub invariant: String,
    /// Replays that failed with it, of `replays`.
    pub reproduced: u32,
    /// How many times the final schedule was replayed.
    pub replays: u32,
    /// Faults of the original round.
    pub faults_before: usize,
    /// Rounds run while shrinking (every candidate's replays, the final ones included).
    pub rounds_run: u32,
    /// Wall time of the shrink, seconds.
    pub seconds: f64,
}

impl ScheduleFile {
    /// Read and check a schedule file.
    pub fn load(path: &Path) -> Result<ScheduleFile> {
        let bytes = std::fs::read(path).map_err(Error::io("reading", path))?;
        let f: ScheduleFile =
            serde_json::from_slice(&bytes).map_err(|source| Error::Json { path: path.to_path_buf(), source })?;
        if f.format != FORMAT {
            return Err(Error::Usage(format!("{}: format {:?}, expected {FORMAT:?}", path.display(), f.format)));
        }
        if f.config.script.is_none() {
            return Err(Error::Usage(format!("{}: config.script is missing", path.display())));
        }
        Ok(f)
    }
}

/// The faults a round injected, as a script: one per fault id (a
/// multi-process kill is one), at its time from the start of the fault
/// phase. Failpoints (armed at spawn), wake-ups and teardown are not faults
/// the script injects.
pub fn faults_of(round_dir: &Path) -> Result<Vec<ScriptedFault>> {
    let paths = crate::round::Paths::new(round_dir);
    let h = hist::load(&paths.history)?;
    let chaos = || h.events.iter().filter(|e| e.is_chaos());
    let t0 = chaos()
        .find(|e| e.op() == "round" && matches!(e.s("phase"), Some("faults-start") | Some("start")))
        .map(hist::Ev::t);
    let t_fs = chaos().find(|e| e.op() == "round" && e.s("phase") == Some("faults-start")).map(hist::Ev::t).or(t0);
    let Some(t_fs) = t_fs else {
        return Err(Error::CheckerInput { path: paths.history.clone(), problem: "no round start recorded".into() });
    };
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for e in chaos().filter(|e| e.op() == "fault") {
        let kind = match e.s("kind").unwrap_or("") {
            "failpoint" | "resume" | "teardown" | "pause-point" => continue,
            "kill-supervisor" => FaultKind::KillLeader,
            "db-switchover" => FaultKind::DbSwitchover,
            k => match serde_json::from_value::<FaultKind>(serde_json::Value::String(k.into())) {
                Ok(k) => k,
                Err(_) => continue, // a kind recorded under another name is not scripted
            },
        };
        if seen.insert(e.u("fault_id").unwrap_or(0)) {
            out.push(ScriptedFault { at: (e.t() - t_fs).max(0.0), kind });
        }
    }
    Ok(out)
}

/// The invariant a failing report fails first: one with violations no
/// known weakness explains, else one with known ones only.
pub fn failing_invariant(r: &RoundReport) -> Option<String> {
    let first =
        |known: bool| r.invariants.iter().find(|v| if known { !v.known.is_empty() } else { !v.violations.is_empty() });
    first(false).or_else(|| first(true)).map(|v| v.name.clone())
}

/// The report fails `inv` (any violation of it, known ones included).
pub fn fails_with(r: &RoundReport, inv: &str) -> bool {
    r.invariants.iter().any(|v| v.name == inv && !(v.violations.is_empty() && v.known.is_empty()))
}

/// How big a candidate is, for "smallest": faults first, then processes
/// and work.
pub fn size(c: &RoundConfig) -> (usize, u32, u64, u64) {
    let last = c.script.as_ref().and_then(|s| s.last()).map_or(0.0, |f| f.at);
    (c.script.as_ref().map_or(0, Vec::len), c.handoffs + c.supervisor_count, c.chunks, (last * 1000.0) as u64)
}

/// The next smaller candidates of `c`, most ambitious first: half the
/// faults removed (each half), then each single fault, then fewer
/// handoffs, supervisors, chunks (and a fault phase ending at the last
/// fault), no failpoints, no racing recoverers, no extra DLQ handoffs.
pub fn reductions(c: &RoundConfig) -> Vec<(String, RoundConfig)> {
    let mut out = Vec::new();
    let faults = c.script.clone().unwrap_or_default();
    let with = |f: Vec<ScriptedFault>| {
        let mut d = c.clone();
        let last = f.last().map_or(0.0, |x| x.at);
        d.script = Some(f);
        d.fault_seconds = d.fault_seconds.min(last + 2.0).max(1.0);
        d
    };
    let n = faults.len();
    let mut chunk = n / 2;
    while chunk >= 1 {
        for start in (0..n).step_by(chunk) {
            let kept: Vec<ScriptedFault> =
                faults.iter().enumerate().filter(|(i, _)| *i < start || *i >= start + chunk).map(|(_, f)| *f).collect();
            out.push((format!("without faults {}..{} of {n}", start + 1, (start + chunk).min(n)), with(kept)));
        }
        chunk /= 2;
    }
    if faults.last().is_some_and(|f| f.at > 0.5) {
        let earlier: Vec<ScriptedFault> =
            faults.iter().map(|f| ScriptedFault { at: f.at / 2.0, kind: f.kind }).collect();
        out.push(("every fault at half its time (a shorter phase)".into(), with(earlier)));
    }
    let mut push = |what: String, f: &dyn Fn(&mut RoundConfig)| {
        let mut d = c.clone();
        f(&mut d);
        out.push((what, d));
    };
    if c.handoffs > 1 {
        push(format!("{} handoffs", c.handoffs - 1), &|d| {
            d.handoffs -= 1;
            d.dlq_handoffs = d.dlq_handoffs.min(d.handoffs);
        });
    }
    if c.dlq_handoffs > 0 {
        push("no DLQ handoff".into(), &|d| d.dlq_handoffs = 0);
    }
    if c.supervisor_count > 2 {
        push(format!("{} supervisors", c.supervisor_count - 1), &|d| d.supervisor_count -= 1);
    }
    if c.chunks >= 20 {
        push(format!("{} chunks", c.chunks / 2), &|d| d.chunks /= 2);
    }
    if c.failpoint_rate > 0.0 {
        push("no failpoints".into(), &|d| d.failpoint_rate = 0.0);
    }
    if c.race_rate > 0.0 {
        push("no racing recoverers".into(), &|d| d.race_rate = 0.0);
    }
    out
}
