//! Replay files: a minimal diverging sequence, saved so that
//! `dhp-conform replay FILE --impl CMD` runs it again (an implementer's
//! regression test), and the readable form of each step.

use super::compare::Divergence;
use super::gen::{Sequence, Step};
use super::Finding;
use crate::suite::{Impl, Options, Outcome};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The file's format tag.
pub const FORMAT: &str = "dhp-conform-explore-replay/1";

/// What a replay file holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReplayFile {
    /// [`FORMAT`].
    pub format: String,
    /// The implementation it was found on.
    pub implementation: String,
    /// The run's seed and the sequence's index in it.
    pub seed: u64,
    /// The sequence's index.
    pub sequence: u64,
    /// Whether the runner moved the clock (`clock-control`) when found.
    pub clock_control: bool,
    /// The steps, readable (informative; `minimal` is what runs).
    pub steps: Vec<String>,
    /// The minimal sequence.
    pub minimal: Sequence,
    /// The divergence it showed.
    pub divergence: Divergence,
    /// How often it reproduced, e.g. `5/5`.
    pub reproduced: String,
}

/// Why a replay file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// Not readable.
    #[error("reading {0}: {1}")]
    Read(String, std::io::Error),
    /// Not a replay file.
    #[error("{0} is not a dhp-conform replay file ({FORMAT}): {1}")]
    Shape(String, String),
}

/// One step, as a sentence.
pub fn step_text(s: &Step) -> String {
    let tok = |w: &u8, stale: bool| if stale { format!("w{w} (stale fence)") } else { format!("w{w}") };
    match s {
        Step::Dispatch { h } => format!("dispatch h{h}"),
        Step::Tampered { h, how: 1 } => {
            format!("dispatch h{h}'s envelope with its inputs changed and input_hash re-bound")
        }
        Step::Tampered { h, how: 2 } => {
            format!("dispatch h{h}'s envelope with its inputs changed and the id recomputed")
        }
        Step::Tampered { h, .. } => format!("dispatch h{h}'s envelope with its inputs changed"),
        Step::Oversize { h } => format!("dispatch an envelope over DHP_MAX_ENVELOPE_BYTES (h{h}'s kind)"),
        Step::Claim { h, w } => format!("w{w} claims h{h}"),
        Step::ClaimRace { h, ws } => {
            let names: Vec<String> = ws.iter().map(|w| format!("w{w}")).collect();
            format!("{} race to claim h{h}", names.join(", "))
        }
        Step::Heartbeat { h, w, stale } => format!("{} heartbeats h{h}", tok(w, *stale)),
        Step::Checkpoint { h, w, stale, s } => format!("{} checkpoints h{h} {{\"s\": {s}}}", tok(w, *stale)),
        Step::NoteStep { h, w, n } => format!("w{w} notes {n} step(s) on h{h}"),
        Step::NoteSpend { h, w, quarters } => format!("w{w} notes a spend of {} USD on h{h}", *quarters as f64 * 0.25),
        Step::Complete { h, w, valid: true } => format!("w{w} completes h{h} with a valid result"),
        Step::Complete { h, w, valid: false } => format!("w{w} completes h{h} with a result the output schema refuses"),
        Step::Release { h, w } => format!("w{w} releases h{h}"),
        Step::Ack { h } => format!("the parent acks h{h}"),
        Step::Advance { secs } => format!("the clock moves on {secs} s"),
        Step::Scan { s } => format!("supervisor s{s} scans"),
        Step::Recover { h, ws } => {
            let names: Vec<String> = ws.iter().map(|w| format!("w{w}")).collect();
            if ws.len() > 1 {
                format!("{} race to recover h{h}", names.join(", "))
            } else {
                format!("{} recovers h{h}", names.join(""))
            }
        }
        Step::Suspend { h } => format!("h{h} is suspended to a bundle"),
        Step::RequestApproval { h, w, class, timeout_s } => {
            format!("w{w} asks approval for a {class} action on h{h} (timeout {timeout_s} s)")
        }
        Step::Decide { h, nth, approve } => {
            format!("approval #{nth} of h{h} is {}", if *approve { "approved" } else { "denied" })
        }
        Step::Await { h, nth } => format!("h{h}'s holder awaits approval #{nth} of h{h}"),
        Step::BadId { h, w, how } => {
            format!("h{h} is claimed under the worker id {:?}", super::gen_extra::bad_worker(*w, *how))
        }
        Step::CompleteIntegral { h, w } => format!("w{w} completes h{h} with {}", super::gen_extra::edge_result(*h)),
        Step::Resume { h, tamper } => {
            let how = ["as written", "with its inputs changed", "with a forged checkpoint"][usize::from(*tamper % 3)];
            format!("h{h}'s last bundle, {how}, resumes on a fresh root")
        }
        Step::Ship { h, how } => {
            let ingest = [
                "as written",
                "with its envelope changed",
                "with a checkpoint's state changed",
                "with a torn line appended",
            ];
            match ingest.get(usize::from(*how)) {
                Some(x) => format!("h{h} is shipped to a log, which is ingested on a fresh root {x}"),
                None => format!("h{h} is shipped to a log that cannot be created"),
            }
        }
        Step::Effect { h, w, step, r } => format!("w{w} records effect e{step} of h{h} as {{\"r\": {r}}}"),
        Step::Capability { h, w, which } => {
            let (d, r) = super::gen_extra::CAPABILITY[usize::from(*which) % 3];
            format!("w{w} requires capability {d}:{r} on h{h}")
        }
        Step::Retune { h, long } => {
            let terms = if *long { "100 s × 2" } else { "1 s × 2" };
            format!("the runner rewrites h{h}'s ownership row to lease terms of {terms}")
        }
        Step::Lead { s } => format!("s{s} asks for leadership (ensure_leadership)"),
        Step::Crash { h } => {
            let w = super::focus::crash_worker();
            format!("a fresh process publishes {w}'s liveness token, claims h{h} as {w}, and is SIGKILLed")
        }
        Step::OpenRace { n } => format!("{n} fresh processes open one new store at one instant"),
        Step::NewerSchema => "a fresh process opens the store marked schema version 4".to_string(),
        Step::LockedWrite { h, w } => {
            format!("w{w} checkpoints h{h} {{\"s\": 9}} while the runner holds the write lock")
        }
        Step::Activity { h, w, n } => format!("w{w} notes the same activity digest {n} time(s) on h{h}"),
        Step::Canonical { which } => {
            format!("canonical of {}", super::gen_extra::CANONICAL_TEXTS[usize::from(*which) % 3])
        }
    }
}

/// Write `f` into `dir`; the path.
pub fn save(dir: &Path, label: &str, seed: u64, index: u64, f: &Finding, clock: bool) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let file = ReplayFile {
        format: FORMAT.into(),
        implementation: label.into(),
        seed,
        sequence: index,
        clock_control: clock,
        steps: f.minimal.steps.iter().map(step_text).collect(),
        minimal: f.minimal.clone(),
        divergence: f.divergence.clone(),
        reproduced: format!("{}/{}", f.reproduced, f.repro_runs),
    };
    let name = format!("explore-{}-seed{seed}-{index}.json", crate::suite::sanitize_label(label));
    let path = dir.join(name);
    let text = serde_json::to_string_pretty(&file).map_err(std::io::Error::other)?;
    std::fs::write(&path, text + "\n")?;
    Ok(path)
}

/// Read a replay file.
pub fn load(path: &Path) -> Result<ReplayFile, ReplayError> {
    let p = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| ReplayError::Read(p.clone(), e))?;
    let f: ReplayFile = serde_json::from_slice(&bytes).map_err(|e| ReplayError::Shape(p.clone(), e.to_string()))?;
    if f.format != FORMAT {
        return Err(ReplayError::Shape(p, format!("format {:?}", f.format)));
    }
    if f.minimal.handoffs.is_empty() || f.minimal.workers == 0 {
        return Err(ReplayError::Shape(p, "a sequence needs a handoff and a worker".into()));
    }
    Ok(f)
}

/// Run the file's sequence `runs` times against `imp`; the divergences
/// seen (one per run that diverged), or why there is no verdict.
pub fn run(imp: &Impl, file: &ReplayFile, runs: u32, opts: &Options) -> Result<Vec<Option<Divergence>>, String> {
    let mut seen = Vec::new();
    let (outcome, _) = crate::suite::run_body(imp, &[], opts, |cx| {
        for k in 0..runs {
            seen.push(super::once(cx, &file.minimal, &format!("replay{k}"))?);
        }
        Ok(())
    });
    match outcome {
        Outcome::Passed => Ok(seen),
        o => Err(o.message().unwrap_or("no verdict").to_string()),
    }
}
