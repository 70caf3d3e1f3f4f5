//! `dhp-conform --explore` (issue 45): seeded random sequences of protocol
//! operations against an implementation, judged step by step by dhp-model,
//! a divergence shrunk to a minimal sequence and saved for
//! `dhp-conform replay`.
//!
//! - [`gen`]: the sequences (steered by the model toward the interesting);
//! - [`world`]: the model's side of a run (dhp-model's operations);
//! - [`run`]: one sequence against the adapter, on a fresh store;
//! - [`compare`]: replies and the store against the model;
//! - [`shrink`]: the minimal sequence that shows the same divergence;
//! - [`replay`]: replay files and the `replay` command;
//! - [`args`]: the command-line flags.

pub mod args;
pub mod compare;
pub mod focus;
pub mod gen;
pub mod gen_extra;
pub mod ids;
pub mod replay;
pub mod run;
pub mod run_extra;
pub mod ship;
pub mod shrink;
pub mod store_steps;
pub mod world;
pub mod world_extra;

use crate::check::Check;
use crate::protocol::feature;
use crate::report::Record;
use crate::suite::{Ctx, Impl, Level, Options, Outcome};
use compare::Divergence;
use gen::{Family, Features, Sequence};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The row that lists divergences an expectations file pins.
pub const PINNED_ID: &str = "explore-pinned";
/// Runs of a minimal sequence that measure how often it reproduces.
pub const REPRO_RUNS: u32 = 5;

/// What to explore.
#[derive(Debug, Clone)]
pub struct Config {
    /// The run's seed: the same seed generates the same sequences.
    pub seed: u64,
    /// Sequences at most.
    pub sequences: u64,
    /// Steps per sequence (plus one forced step per family).
    pub steps: usize,
    /// Exploring stops starting sequences after this long (shrinking a
    /// divergence found by then still finishes, within its own limits).
    pub time: Duration,
    /// Where replay files are written.
    pub replay_dir: PathBuf,
    /// Divergence keys the expectations pin for this implementation, with why.
    pub pinned: Vec<(String, String)>,
}

/// A divergence, shrunk.
#[derive(Debug, Clone)]
pub struct Finding {
    /// The family of the diverging step.
    pub family: Family,
    /// The minimal sequence.
    pub minimal: Sequence,
    /// Its divergence.
    pub divergence: Divergence,
    /// Steps of the sequence where it was found.
    pub found_in: usize,
    /// How often the minimal sequence reproduced it …
    pub reproduced: u32,
    /// … of this many runs ([`REPRO_RUNS`]; fewer for a pinned one).
    pub repro_runs: u32,
    /// Candidate runs the shrink took.
    pub shrink_runs: usize,
    /// The replay file written, if it could be.
    pub replay: Option<PathBuf>,
    /// The pin's reason if the expectations pin it.
    pub pinned: Option<String>,
}

/// A whole run.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Sequences run.
    pub sequences: u64,
    /// Steps run.
    pub steps: usize,
    /// Families whose operations ran.
    pub exercised: BTreeSet<Family>,
    /// Divergences found (at most one not pinned: exploring stops there).
    pub findings: Vec<Finding>,
    /// Divergences on a clock deadline that did not show again.
    pub clock_races: usize,
}

fn features(cx: &Ctx<'_>) -> Features {
    Features {
        approvals: cx.has(feature::APPROVALS),
        effects: cx.has(feature::EFFECTS),
        capabilities: cx.has(feature::CAPABILITIES),
        store: cx.has(feature::STANDARD_STORE) || cx.has(feature::POSTGRES_STORE),
        stall: cx.has(feature::STALL_DETECTION),
        canonical: cx.has(feature::CANONICAL),
        sqlite: cx.has(feature::STANDARD_STORE),
        liveness: cx.has(feature::FAST_DEATH_DETECTION),
    }
}

/// The pin of `d`, if a pinned key is a prefix of its key.
fn pin_of(cfg: &Config, d: &Divergence) -> Option<String> {
    cfg.pinned.iter().find(|(k, _)| d.key.starts_with(k.as_str())).map(|(_, why)| why.clone())
}

/// Run a sequence on a fresh store; its divergence, if any.
pub fn once(cx: &Ctx<'_>, seq: &Sequence, name: &str) -> Check<Option<Divergence>> {
    Ok(run::run_sequence(cx, seq, name)?.divergence)
}

/// `seq` run again without the step of its pinned divergence `d` and the
/// later steps that send the same request (and so for the pinned ones
/// after it, up to three times), so that the families after it run too.
fn past_pinned(cx: &Ctx<'_>, cfg: &Config, seq: &Sequence, d: &Divergence, sum: &mut Summary, i: u64) -> Check {
    let (mut rest, mut d) = (seq.clone(), d.clone());
    for k in 0..3 {
        if d.step >= rest.steps.len() {
            break;
        }
        let op = compare::op_name(&rest.steps[d.step]);
        let mut k2 = 0;
        rest.steps.retain(|x| {
            k2 += 1;
            k2 <= d.step || compare::op_name(x) != op
        });
        let r = run::run_sequence(cx, &rest, &format!("seq{i}-past{k}"))?;
        sum.steps += r.steps_run;
        sum.exercised.extend(r.exercised.iter().copied());
        match r.divergence {
            Some(next) if pin_of(cfg, &next).is_some() => d = next,
            _ => break,
        }
    }
    Ok(())
}

/// Explore `cx`'s implementation.
pub fn explore(cx: &Ctx<'_>, cfg: &Config, label: &str) -> Check<Summary> {
    let start = Instant::now();
    let f = features(cx);
    let mut sum = Summary::default();
    let mut shrunk_keys = BTreeSet::new();
    let mut n = 0usize;
    let wanted = gen::families(f);
    for i in 0..cfg.sequences {
        // Past --time, go on (up to twice it) only while a family has not
        // run yet: a sequence cut short by a pinned divergence may leave one.
        let covered = wanted.iter().all(|x| sum.exercised.contains(x));
        if start.elapsed() >= cfg.time && (covered || start.elapsed() >= cfg.time * 2) {
            break;
        }
        let seq = gen::sequence(cfg.seed, i, cfg.steps, f);
        let r = run::run_sequence(cx, &seq, &format!("seq{i}"))?;
        sum.sequences += 1;
        sum.steps += r.steps_run;
        sum.exercised.extend(r.exercised.iter().copied());
        let Some(d) = r.divergence else { continue };
        if d.timing {
            // A reply on the far side of a deadline: only a divergence
            // that shows again without the race counts.
            let again = once(cx, &seq, &format!("seq{i}-again"))?;
            if again.as_ref().is_none_or(|a| a.timing) {
                sum.clock_races += 1;
                continue;
            }
        }
        let pinned = pin_of(cfg, &d);
        if pinned.is_some() {
            // the families after a known divergence are still explored
            past_pinned(cx, cfg, &seq, &d, &mut sum, i)?;
        }
        if pinned.is_some() && !shrunk_keys.insert(d.key.clone()) {
            continue;
        }
        // A pinned divergence is listed, not hunted: a short shrink.
        let (runs, secs) = if pinned.is_some() { (20, 6) } else { (600, 240) };
        let limits = shrink::Limits { runs, until: Instant::now() + Duration::from_secs(secs) };
        let mut run = |s: &Sequence| {
            n += 1;
            once(cx, s, &format!("shrink{n}"))
        };
        let s = shrink::shrink(&seq, d, limits, &mut run)?;
        let mut reproduced = 0;
        // a pinned divergence is listed, not measured closely
        let repro = if pinned.is_some() { 2 } else { REPRO_RUNS };
        for k in 0..repro {
            if once(cx, &s.seq, &format!("repro{i}-{k}"))?.is_some_and(|x| x.same_as(&s.divergence)) {
                reproduced += 1;
            }
        }
        let family = s.seq.steps.get(s.divergence.step).map_or(Family::Dispatch, gen::Step::family);
        let mut finding = Finding {
            family,
            minimal: s.seq,
            divergence: s.divergence,
            found_in: r.steps_run,
            reproduced,
            repro_runs: repro,
            shrink_runs: s.runs,
            replay: None,
            pinned,
        };
        finding.replay = replay::save(&cfg.replay_dir, label, cfg.seed, i, &finding, cx.controls_clock()).ok();
        let stop = finding.pinned.is_none();
        sum.findings.push(finding);
        if stop {
            break;
        }
    }
    Ok(sum)
}

/// The steps of `seq`, one readable line each, the diverging one marked.
pub fn describe(seq: &Sequence, d: Option<&Divergence>) -> String {
    let mut out = String::new();
    for (i, s) in seq.steps.iter().enumerate() {
        let mark = if d.is_some_and(|d| d.step == i) { "  <- diverges" } else { "" };
        out.push_str(&format!("  {:>2}. {}{mark}\n", i + 1, replay::step_text(s)));
    }
    out
}

/// What `replay --impl` takes to reach `imp` again: `ours`, `reference`,
/// or its adapter command, quoted for a shell.
pub fn impl_arg(imp: &Impl) -> String {
    if matches!(imp.label.as_str(), "ours" | "reference") {
        imp.label.clone()
    } else {
        format!("'{}'", imp.command.replace('\'', r"'\''"))
    }
}

/// A finding as a report message; `imp` is what `--impl` takes.
pub fn message(f: &Finding, cfg_seed: u64, imp: &str) -> String {
    let d = &f.divergence;
    let replay = f.replay.as_ref().map_or_else(
        || "(the replay file could not be written)".to_string(),
        |p| format!("dhp-conform replay {} --impl {imp}", p.display()),
    );
    format!(
        "divergence from the model (seed {cfg_seed}), shrunk from {} to {} steps in {} runs; reproduced {}/{}:\n{}\
         after step {}: {} — model {}, implementation {}\nrule: {}\nreplay: {replay}",
        f.found_in,
        f.minimal.steps.len(),
        f.shrink_runs,
        f.reproduced,
        f.repro_runs,
        describe(&f.minimal, Some(d)),
        d.step + 1,
        d.what,
        d.want,
        d.got,
        d.rule,
    )
}

/// The report rows of a run: one per family, then [`PINNED_ID`].
pub fn records(imp: &Impl, cfg: &Config, opts: &Options) -> Vec<Record> {
    let mut sum = None;
    let (outcome, seconds) = crate::suite::run_body(imp, &[], opts, |cx| {
        sum = Some(explore(cx, cfg, &imp.label)?);
        Ok(())
    });
    let row = |family: String, outcome: Outcome| Record {
        implementation: imp.label.clone(),
        assertion: family,
        level: Level::Explore,
        outcome,
        seconds,
        stderr: Vec::new(),
        expected: None,
    };
    let Some(sum) = sum.filter(|_| matches!(outcome, Outcome::Passed)) else {
        // no verdict: the exchange broke, or the implementation could not run
        let o = match outcome {
            Outcome::Passed => Outcome::Errored("explore ended without a summary".into()),
            o => o,
        };
        let mut rows: Vec<Record> = Family::ALL.iter().map(|f| row(f.id(), o.clone())).collect();
        rows.push(row(PINNED_ID.into(), o));
        return rows;
    };
    let arg = impl_arg(imp);
    let wanted = gen::families(Features {
        approvals: imp.has(feature::APPROVALS),
        effects: imp.has(feature::EFFECTS),
        capabilities: imp.has(feature::CAPABILITIES),
        store: false,
        stall: false,
        canonical: false,
        sqlite: false,
        liveness: false,
    });
    let mut rows = Vec::new();
    let unpinned: BTreeMap<Family, &Finding> =
        sum.findings.iter().filter(|f| f.pinned.is_none()).map(|f| (f.family, f)).collect();
    for fam in Family::ALL {
        let o = if !wanted.contains(&fam) {
            Outcome::Skipped(format!(
                "unsupported: {} does not declare the feature `{}` needs",
                imp.label,
                fam.as_str()
            ))
        } else if let Some(f) = unpinned.get(&fam) {
            Outcome::Failed(message(f, cfg.seed, &arg))
        } else if sum.exercised.contains(&fam) {
            Outcome::Passed
        } else if !unpinned.is_empty() {
            Outcome::Skipped("not exercised: exploring stopped at the first divergence".into())
        } else {
            Outcome::Errored(format!("never exercised in {} sequences (seed {}): not covered", sum.sequences, cfg.seed))
        };
        rows.push(row(fam.id(), o));
    }
    let pinned: Vec<String> = sum
        .findings
        .iter()
        .filter_map(|f| {
            f.pinned.as_ref().map(|why| format!("{} [{why}]\n{}", f.divergence.key, message(f, cfg.seed, &arg)))
        })
        .collect();
    let o = if pinned.is_empty() { Outcome::Passed } else { Outcome::Failed(pinned.join("\n\n")) };
    rows.push(row(PINNED_ID.into(), o));
    eprintln!(
        "explore {}: seed {}, {} sequences, {} steps, {} divergence(s) ({} pinned), {} clock race(s) set aside, {:.1}s",
        imp.label,
        cfg.seed,
        sum.sequences,
        sum.steps,
        sum.findings.len(),
        sum.findings.iter().filter(|f| f.pinned.is_some()).count(),
        sum.clock_races,
        seconds
    );
    rows
}

/// Every report row id --explore writes (for `--expect` files).
pub fn ids() -> Vec<String> {
    let mut v: Vec<String> = Family::ALL.iter().map(|f| f.id()).collect();
    v.push(PINNED_ID.into());
    v
}
