//! `dhp-chaos shrink RUN_DIR` and `dhp-chaos --schedule FILE`: replaying a
//! failing round's fault schedule as data, and making it smaller while it
//! still fails with the same invariant (`dhp_chaos::shrink`).

use anyhow::{bail, Context, Result};
use dhp_chaos::check::{self, RoundReport};
use dhp_chaos::config::RoundConfig;
use dhp_chaos::shrink::{self, ScheduleFile, FORMAT};
use dhp_chaos::{report, round, timeline};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Run one round of `cfg` in `dir` and check it (report and timeline written).
fn run_one(cfg: &RoundConfig, dir: &Path) -> Result<RoundReport> {
    round::Driver::new(cfg, dir)?.run(|_| {})?;
    let r = check::check_round(dir)?;
    std::fs::write(dir.join("round-report.json"), serde_json::to_vec_pretty(&r)?)?;
    timeline::write(dir)?;
    Ok(r)
}

/// Counts rounds and keeps the directories of failing ones.
struct Replayer {
    work: PathBuf,
    n: u32,
    inv: String,
}

impl Replayer {
    /// Replay `cfg` up to `tries` times; with `all` false, stop at the
    /// first that passes (a candidate must fail every time to be kept).
    /// (failures, a failing round's directory)
    fn attempt(&mut self, cfg: &RoundConfig, tries: u32, all: bool) -> Result<(u32, Option<PathBuf>)> {
        let (mut k, mut kept) = (0, None);
        for _ in 0..tries {
            self.n += 1;
            let dir = self.work.join(format!("replay-{:04}", self.n));
            let r = run_one(cfg, &dir)?;
            if shrink::fails_with(&r, &self.inv) {
                k += 1;
                if kept.is_none() {
                    kept = Some(dir);
                } else {
                    let _ = std::fs::remove_dir_all(&dir);
                }
            } else {
                let _ = std::fs::remove_dir_all(&dir);
                if !all {
                    break;
                }
            }
        }
        Ok((k, kept))
    }
}

/// The first round of `run` whose saved report fails an invariant.
fn failing_round(run: &Path) -> Result<(PathBuf, RoundReport, String)> {
    let mut dirs: Vec<PathBuf> = if check::is_round_dir(run) {
        vec![run.to_path_buf()]
    } else {
        std::fs::read_dir(run)
            .with_context(|| format!("reading {}", run.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| check::is_round_dir(p))
            .collect()
    };
    dirs.sort();
    for d in dirs {
        let r = check::load_saved_report(&d).or_else(|_| check::check_round(&d))?;
        if let Some(inv) = shrink::failing_invariant(&r) {
            return Ok((d, r, inv));
        }
    }
    bail!("{} holds no round that failed an invariant (nothing to shrink)", run.display())
}

/// `dhp-chaos shrink RUN_DIR`.
pub fn shrink(run: &Path, replays: u32, tries: u32, budget_minutes: f64, budget_rounds: Option<u32>) -> Result<i32> {
    let t = Instant::now();
    let (dir, _, inv) = failing_round(run)?;
    let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("round.json"))?)
        .with_context(|| format!("reading {}/round.json", dir.display()))?;
    let mut cfg: RoundConfig = serde_json::from_value(meta["config"].clone()).context("round.json's config")?;
    if cfg.host.is_some() {
        bail!("shrink replays one-host rounds; {} is a host of a --hosts round", dir.display());
    }
    let faults = shrink::faults_of(&dir)?;
    let before = faults.len();
    cfg.script = Some(faults);
    cfg.steer = false;
    cfg.round = 0;
    let work = run.join("shrink");
    if work.exists() {
        bail!("{} exists (a previous shrink's): move it away first", work.display());
    }
    std::fs::create_dir_all(&work)?;
    println!("dhp-chaos shrink: {} fails {inv}; its schedule has {before} fault(s)", dir.display());
    let mut rp = Replayer { work: work.clone(), n: 0, inv: inv.clone() };
    let (k, _) = rp.attempt(&cfg, tries, true)?;
    if k == 0 {
        println!("dhp-chaos shrink: the recorded schedule did not fail {inv} in {tries} replay(s): nothing to shrink");
        return Ok(1);
    }
    let budget = budget_minutes * 60.0;
    let first = rp.n;
    'outer: loop {
        for (what, cand) in shrink::reductions(&cfg) {
            if t.elapsed().as_secs_f64() > budget {
                println!("  budget of {budget_minutes} min spent: keeping the smallest so far");
                break 'outer;
            }
            if let Some(b) = budget_rounds.filter(|b| rp.n - first >= *b) {
                println!("  budget of {b} round(s) spent: keeping the smallest so far");
                break 'outer;
            }
            let n0 = rp.n;
            let (k, _) = rp.attempt(&cand, tries, false)?;
            let kept = k == tries && shrink::size(&cand) < shrink::size(&cfg);
            println!("  {what}: failed {k} of {} — {}", rp.n - n0, if kept { "kept" } else { "dropped" });
            if kept {
                cfg = cand;
                continue 'outer;
            }
        }
        break;
    }
    let (k, kept) = rp.attempt(&cfg, replays, true)?;
    let after = cfg.script.as_ref().map_or(0, Vec::len);
    let file = work.join("schedule.json");
    let f = ScheduleFile {
        format: FORMAT.into(),
        config: cfg.clone(),
        invariant: inv.clone(),
        reproduced: k,
        replays,
        faults_before: before,
        rounds_run: rp.n,
        seconds: t.elapsed().as_secs_f64(),
    };
    std::fs::write(&file, serde_json::to_vec_pretty(&f)?)?;
    let abs = std::fs::canonicalize(&file).unwrap_or(file.clone());
    println!(
        "dhp-chaos shrink: {before} → {after} fault(s), {} handoff(s), {} chunk(s); {inv} failed in {k} of {replays} replays; {} rounds run in {:.0} s",
        cfg.handoffs,
        cfg.chunks,
        rp.n,
        f.seconds
    );
    if let Some(d) = kept {
        println!("timeline of a failing replay: {}", d.join("timeline.svg").display());
    }
    println!("schedule: {}", abs.display());
    println!("replay: dhp-chaos --schedule {}", abs.display());
    Ok(if k > 0 { 0 } else { 1 })
}

/// `dhp-chaos --schedule FILE`: one round of the file's configuration and script.
pub fn replay(file: &Path, out: Option<&Path>, allow_known: bool) -> Result<i32> {
    let f = ScheduleFile::load(file)?;
    let out = match out {
        Some(o) => o.to_path_buf(),
        None => std::env::temp_dir().join("dhp-chaos").join(format!("schedule-{}", std::process::id())),
    };
    if std::fs::read_dir(&out).is_ok_and(|mut d| d.next().is_some()) {
        bail!("--out {} is not empty: give a new or empty directory", out.display());
    }
    let mut cfg = f.config;
    cfg.replay = format!("dhp-chaos --schedule {}", file.display());
    let n = cfg.script.as_ref().map_or(0, Vec::len);
    println!(
        "dhp-chaos: replaying {} ({n} scripted fault(s); it failed {} in {} of {} replays)",
        file.display(),
        f.invariant,
        f.reproduced,
        f.replays
    );
    let r = run_one(&cfg, &out.join("round-0000"))?;
    let rounds = vec![r];
    let t = report::totals(&rounds);
    print!("{}", report::summary(&rounds, &t, true));
    let code = report::exit_code(&rounds, allow_known, false);
    println!("round: {}", out.join("round-0000").display());
    println!("{}", report::verdict_line(code, &rounds, &t));
    Ok(code)
}
