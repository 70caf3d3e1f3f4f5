//! `dhp-chaos ledger`: the nightly ensemble's findings ledger and coverage
//! thresholds (`dhp_chaos::ledger`).

use anyhow::{bail, Context, Result};
use dhp_chaos::ledger::thresholds::Thresholds;
use dhp_chaos::ledger::{failures, Ledger};
use std::path::{Path, PathBuf};

/// What `dhp-chaos ledger` was asked.
pub struct LedgerArgs {
    pub dirs: Vec<PathBuf>,
    pub ledger: PathBuf,
    pub label: String,
    pub night: Option<String>,
    pub thresholds: Option<PathBuf>,
    pub regressions: bool,
}

fn results(dir: &Path) -> Result<serde_json::Value> {
    let p = dir.join("results.json");
    let text = std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", p.display()))
}

/// Update the ledger from the night's run directories and check the
/// coverage thresholds; exit 1 when a threshold was missed. With
/// `--regressions`: print the label's regression rounds' arguments.
pub fn ledger(a: LedgerArgs) -> Result<i32> {
    let mut l = Ledger::load(&a.ledger)?;
    if a.regressions {
        for r in l.regressions(&a.label) {
            println!("{r}");
        }
        return Ok(0);
    }
    if a.dirs.is_empty() {
        bail!("dhp-chaos ledger: give the night's run directories (or --regressions)");
    }
    // every input is read before the ledger is written: a bad thresholds
    // file must not leave the night half recorded
    let thresholds = a.thresholds.as_ref().map(|tp| Thresholds::load(tp).map(|t| (tp, t))).transpose()?;
    let night = a.night.unwrap_or_else(|| chrono::Utc::now().format("%Y-%m-%d").to_string());
    let mut failed = Vec::new();
    let mut rounds = Vec::new();
    for d in &a.dirs {
        let r = results(d)?;
        failed.extend(failures(&r));
        rounds.extend(r["rounds"].as_array().cloned().unwrap_or_default());
    }
    for (key, status) in l.update(&a.label, &night, &failed) {
        println!("finding {key}: {}", serde_json::to_value(status)?.as_str().unwrap_or("?"));
    }
    l.save(&a.ledger)?;
    let open = l.findings.values().filter(|f| f.label == a.label && f.status != dhp_chaos::ledger::Status::Resolved);
    println!(
        "ledger {}: {} open finding(s) of {} ({} rounds read)",
        a.ledger.display(),
        open.count(),
        a.label,
        rounds.len()
    );
    let Some((tp, t)) = thresholds else { return Ok(0) };
    let mut missed = 0;
    for s in t.measure(&rounds).iter().filter(|s| s.min_share > 0.0) {
        let mark = if s.missed() { "MISSED" } else { "ok" };
        missed += usize::from(s.missed());
        println!(
            "coverage {:<34} hit in {:>4} of {:>4} rounds (at least {:.0} %): {mark}",
            s.name,
            s.hit,
            s.applicable,
            s.min_share * 100.0
        );
    }
    if missed > 0 {
        println!("dhp-chaos ledger: {missed} coverage threshold(s) missed ({})", tp.display());
        return Ok(1);
    }
    Ok(0)
}
