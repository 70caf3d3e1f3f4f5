//! `dhp-chaos analyze DIR`: re-check a saved run from its files.

use anyhow::{bail, Context, Result};
use dhp_chaos::{check, report, timeline};
use std::path::{Path, PathBuf};

/// The round directories of a run directory (or the one round given):
/// full ones, and those a nightly pruned after they passed.
fn round_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    if check::is_round_dir(dir) || check::is_pruned_round_dir(dir) {
        return Ok(vec![dir.to_path_buf()]);
    }
    if let Some(hosts) = dhp_chaos::hosts::host_dirs(dir) {
        return Ok(hosts);
    }
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .flat_map(|p| dhp_chaos::hosts::host_dirs(&p).unwrap_or_else(|| vec![p]))
        .filter(|p| check::is_round_dir(p) || check::is_pruned_round_dir(p))
        .collect();
    v.sort();
    if v.is_empty() {
        bail!(
            "{} holds no round directories (round.json with history.jsonl, or with round-report.json if pruned)",
            dir.display()
        );
    }
    Ok(v)
}

pub fn analyze(dir: &Path, with_timeline: bool) -> Result<i32> {
    let mut reports = Vec::new();
    let mut pruned = Vec::new();
    let mut net_chaos = Vec::new();
    for d in round_dirs(dir)? {
        if !check::is_round_dir(&d) {
            // a passing nightly round keeps only its reports: its verdict
            // cannot be re-checked, so it is taken as saved, and said so
            reports.push(check::load_saved_report(&d)?);
            pruned.push(d.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
            continue;
        }
        let r = check::check_round(&d).with_context(|| format!("checking {}", d.display()))?;
        if let Some(nc) = dhp_chaos::scenario::reanalyze(&d)? {
            net_chaos.push(nc);
        }
        if with_timeline {
            timeline::write(&d)?;
            // a host of a multi-host round: its round's timeline too
            if let Some(round) = d.parent().filter(|r| r.join(dhp_chaos::hosts::HOSTS_JSON).exists()) {
                if let Some(n) = dhp_chaos::hosts::host_dirs(round).map(|v| v.len() as u32) {
                    dhp_chaos::hosts::timeline::write(round, n)?;
                }
            }
        }
        reports.push(r);
    }
    let t = report::totals(&reports);
    print!("{}", report::summary(&reports, &t, true));
    if !pruned.is_empty() {
        println!(
            "\n{} round(s) pruned after passing (no history or store kept), shown from their saved round-report.json, not re-checked: {}",
            pruned.len(),
            pruned.join(", ")
        );
    }
    for (_, text) in &net_chaos {
        print!("{text}");
    }
    // the run's own leniency, as its saved command gave it: the same exit code as the run
    let allow_known = saved_command(dir).iter().any(|a| a == "--allow-known-reference-bugs");
    let mut code = report::exit_code(&reports, allow_known, false);
    if code != 1 && !net_chaos.iter().all(|n| n.0) {
        code = 1;
    }
    if net_chaos.is_empty() {
        // the run directory's page, again from its saved files
        let page = dhp_chaos::site::write(dir)?;
        println!("\nreport: {}", page.display());
    }
    println!("{}", report::verdict_line(code, &reports, &t));
    Ok(code)
}

/// The command line `results.json` saved (empty without one).
fn saved_command(dir: &Path) -> Vec<String> {
    std::fs::read(dir.join("results.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v["command"].as_array().map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect()))
        .unwrap_or_default()
}
