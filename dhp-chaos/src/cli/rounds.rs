//! The rounds of a run on each engine: a line per round, the summary,
//! `results.json`.

use super::args::RunArgs;
use super::replay::replay_command;
use anyhow::{bail, Context, Result};
use dhp_chaos::check::{self, RoundReport};
use dhp_chaos::config::RoundConfig;
use dhp_chaos::round::{db_auto, db_failover, db_faults};
use dhp_chaos::site::{self, dashboard::Dashboard};
use dhp_chaos::{report, round, timeline};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;
use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant};

/// The rounds on each `--store` engine (both, side by side, when given twice).
pub fn run_engines(
    a: &RunArgs,
    tmpl: &RoundConfig,
    out: &Path,
    started_at: chrono::DateTime<chrono::Utc>,
    dash: Option<&Dashboard>,
) -> Result<i32> {
    let engines = &a.db.store;
    if engines.iter().filter(|e| e.is_sqlite()).count() > 1 || engines.iter().filter(|e| !e.is_sqlite()).count() > 1 {
        bail!("--store twice runs the same seeds on both engines: give sqlite once and postgres (or a URL) once");
    }
    // refuse database faults (and a useless --pg-data) before any engine runs
    db_faults::check_pg_data_used(a.db.pg_data.as_deref(), engines.iter().any(|e| e.url.is_some()))?;
    for e in engines {
        let engine = e.engine();
        db_faults::check_allowed(
            &tmpl.fault_mix,
            engine,
            e.label == "postgres",
            e.url.as_deref(),
            a.db.pg_data.as_deref(),
        )?;
        db_faults::check_db_link(&tmpl.fault_mix, engine, e.url.as_deref())?;
        db_failover::check_cluster(&tmpl.fault_mix, a.db.pg_cluster.as_deref(), e.label == "postgres")?;
        db_auto::check_manager(&tmpl.fault_mix, a.db.pg_cluster.as_deref(), a.db.failover_manager.as_deref())?;
    }
    let manager = a.db.failover_manager.as_deref().map(dhp_chaos::pg_cluster::Manager::parse).transpose()?;
    let manager = manager.unwrap_or(dhp_chaos::pg_cluster::Manager::Harness);
    let mut codes = Vec::new();
    let mut all_totals = Vec::new();
    for e in engines {
        let mut t = tmpl.clone();
        t.engine = e.engine().into();
        // the default mix gets the database faults wherever the harness can crash the server
        let db_ok = e.label == "postgres" || (e.url.is_some() && a.db.pg_data.is_some());
        let replicated = a.db.pg_cluster.as_deref().map(dhp_chaos::pg_cluster::Replication::parse).transpose()?;
        if a.chaos.faults.is_none() && db_ok {
            t.fault_mix.extend_from_slice(
                if replicated.is_some() && manager == dhp_chaos::pg_cluster::Manager::PgAutoFailover {
                    &db_auto::AUTO_DB_MIX[..]
                } else if replicated.is_some() {
                    &db_failover::CLUSTER_DB_MIX[..]
                } else {
                    &db_faults::DEFAULT_DB_MIX[..]
                },
            );
        }
        // the database this engine's rounds run on, when the run owns it
        let owned = match replicated {
            Some(r) if e.label == "postgres" => Some(dhp_chaos::pg_cluster::start_owned(r, manager)?),
            None if e.label == "postgres" => Some(dhp_chaos::pg::start_owned()?),
            _ => None,
        };
        t.pg_data = match &owned {
            Some(c) => Some(c.dir.clone()),
            None if e.url.is_some() => a.db.pg_data.clone(),
            None => None,
        };
        t.pg_url = owned.as_ref().map(|c| c.url.clone()).or_else(|| e.url.clone());
        let replicated = replicated.filter(|_| owned.is_some());
        if let Some(r) = replicated {
            t.pg_cluster = Some(r.name().to_string());
            t.failover_manager = Some(manager.label().to_string());
        }
        if t.pg_url.is_some() {
            let where_ = if let Some(r) = replicated {
                format!(
                    "a replicated cluster owned by this run (primary + 2 standbys, {} replication, failover-manager: {})",
                    r.name(),
                    manager.label()
                )
            } else if owned.is_some() {
                "a throwaway cluster owned by this run".to_string()
            } else {
                dhp_chaos::pg::mask(&e.url.clone().unwrap_or_default())
            };
            println!("dhp-chaos: store postgres: {where_}, one schema per round (chaos_<seed>_<round>_{})", t.run_id);
        }
        let out_e = if engines.len() > 1 { out.join(&t.engine) } else { out.to_path_buf() };
        std::fs::create_dir_all(&out_e).with_context(|| format!("creating {}", out_e.display()))?;
        if let Some(d) = dash {
            d.set_run_dir(&out_e);
        }
        let (code, totals) = run_rounds(a, &t, &out_e, started_at, dash)?;
        drop(owned);
        codes.push(code);
        all_totals.push((t.engine.clone(), totals));
    }
    if all_totals.len() > 1 {
        println!("\nsame seeds, both engines:\n{}", report::side_by_side(&all_totals));
    }
    Ok(codes.into_iter().max().unwrap_or(0))
}

/// The rounds of one engine: a line per round, the summary, `results.json`.
pub fn run_rounds(
    a: &RunArgs,
    tmpl: &RoundConfig,
    out: &Path,
    started_at: chrono::DateTime<chrono::Utc>,
    dash: Option<&Dashboard>,
) -> Result<(i32, report::Totals)> {
    let seed = tmpl.seed;
    // parse::budget_minutes bounds it; try_ refuses rather than panics anyway
    let budget = Duration::try_from_secs_f64(a.rounds.budget_minutes * 60.0)
        .map_err(|e| anyhow::anyhow!("--budget-minutes {}: {e}", a.rounds.budget_minutes))?;
    let t_start = Instant::now();
    let mut reports: Vec<RoundReport> = Vec::new();
    let mut harness_error: Option<anyhow::Error> = None;
    let mut last_round = Duration::ZERO;
    let mut i: u32 = 0;
    // Several rounds: a line per round as it ends. The summary repeats the
    // table only on a terminal (where the lines have scrolled away), not in
    // a log or a pipe.
    let live_table = a.rounds.nightly || a.rounds.rounds > 1;
    let table_in_summary = !live_table || std::io::stdout().is_terminal();
    loop {
        if a.rounds.nightly {
            if t_start.elapsed() + last_round > budget && i > 0 {
                break;
            }
        } else if i >= a.rounds.rounds {
            break;
        }
        let rseed = seed.wrapping_add(u64::from(i));
        let mut cfg = tmpl.clone();
        cfg.seed = rseed;
        cfg.round = i;
        cfg.replay = replay_command(rseed);
        let dir = out.join(format!("round-{i:04}"));
        let r0 = Instant::now();
        if let Some(d) = dash {
            d.round_started(i, rseed, cfg.handoffs, &dir);
        }
        let ran = run_round(&cfg, &dir, a.output.quiet, a.net.hosts, dash);
        if let Some(d) = dash {
            d.round_ended();
        }
        match ran {
            Ok(rs) => {
                for r in rs {
                    if live_table {
                        if reports.is_empty() {
                            println!("{}", report::header());
                        }
                        println!("{}", report::round_line(&r));
                    }
                    let allowed = a.verdict.allow_known_reference_bugs && r.unexplained() == 0;
                    let failed = !(r.held || allowed);
                    if failed {
                        println!("  round {i} VIOLATED — artifacts kept in {}", dir.display());
                        println!("  replay: {}", r.replay);
                    } else if a.rounds.nightly && !a.output.keep_passing {
                        // passing rounds keep their reports and timeline only (the history of
                        // a long round is megabytes; a nightly runs dozens of rounds)
                        let rdir = Path::new(&r.dir);
                        for sub in ["store", "transport", "procs", "peer"] {
                            let _ = std::fs::remove_dir_all(rdir.join(sub));
                        }
                        let _ = std::fs::remove_file(rdir.join("history.jsonl"));
                        let _ = std::fs::remove_file(rdir.join("proxy.jsonl"));
                    }
                    reports.push(r);
                    if failed && a.rounds.nightly {
                        break;
                    }
                }
                // the page, with this round's row (rewritten with the run's verdict at the end)
                site_page(out);
                if a.rounds.nightly
                    && reports
                        .iter()
                        .any(|r| !(r.held || (a.verdict.allow_known_reference_bugs && r.unexplained() == 0)))
                {
                    break;
                }
            }
            Err(e) => {
                eprintln!("dhp-chaos: round {i} (seed {rseed}): harness error: {e:#}");
                eprintln!("  artifacts in {}; replay: {}", dir.display(), cfg.replay);
                harness_error = Some(e);
                break;
            }
        }
        last_round = r0.elapsed();
        i += 1;
    }
    let totals = report::totals(&reports);
    print!("{}", report::summary(&reports, &totals, table_in_summary));
    let code = report::exit_code(&reports, a.verdict.allow_known_reference_bugs, harness_error.is_some());
    let results = json!({
        "seed": seed,
        "started_at": started_at.to_rfc3339(),
        // masked: results.json is meant to be shared
        "command": std::env::args().map(|a| super::mask::mask_arg(&a)).collect::<Vec<_>>(),
        "note": "a seed replays the fault schedule, not the OS interleaving; verdicts rest on the harness's own sources (store audit, workload service, processes, store, transport logs); each round's history.jsonl is optional detail",
        "exit_code": code,
        "harness_error": harness_error.as_ref().map(|e| format!("{e:#}")),
        "totals": totals,
        "rounds": reports,
    });
    std::fs::write(out.join("results.json"), super::mask::masked_json(&results)?)?;
    println!("\nresults: {}", out.join("results.json").display());
    site_page(out);
    println!("report: {}", out.join(site::INDEX).display());
    println!("{}", report::verdict_line(code, &reports, &totals));
    Ok((code, totals))
}

/// Write the run's `index.html`; a page that cannot be written is said, and the run goes on.
fn site_page(out: &Path) {
    if let Err(e) = site::write(out) {
        eprintln!("dhp-chaos: writing {}: {:#}", out.join(site::INDEX).display(), anyhow::Error::from(e));
    }
}

fn run_round(
    cfg: &RoundConfig,
    dir: &Path,
    quiet: bool,
    hosts: Option<u32>,
    dash: Option<&Dashboard>,
) -> Result<Vec<RoundReport>> {
    let pb = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::with_draw_target(Some(u64::from(cfg.handoffs)), ProgressDrawTarget::stderr())
    };
    pb.set_style(
        ProgressStyle::with_template("{spinner} round {prefix} [{elapsed_precise}] {bar:24} {pos}/{len} ended · {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb.set_prefix(format!("{} (seed {})", cfg.round, cfg.seed));
    let mut last = Instant::now();
    let progress = |live: &round::Live| {
        if last.elapsed() >= Duration::from_millis(100) {
            if let Some(d) = dash {
                d.progress(live);
            }
            last = Instant::now();
            pb.set_position(live.terminal as u64);
            pb.set_message(format!(
                "kills {} (failpoints {}), pauses {}, workers started {}, supervisors started {}",
                live.kills, live.failpoint_kills, live.pauses, live.spawned_workers, live.spawned_supervisors
            ));
        }
    };
    let dirs = match hosts {
        Some(n) => dhp_chaos::hosts::run(cfg, dir, n, progress)?,
        None => {
            round::Driver::new(cfg, dir)?.run(progress)?;
            vec![dir.to_path_buf()]
        }
    };
    pb.finish_and_clear();
    if let Some(n) = hosts {
        dhp_chaos::hosts::timeline::write(dir, n)?;
    }
    let mut out = Vec::new();
    for d in dirs {
        let r = check::check_round(&d)?;
        std::fs::write(d.join("round-report.json"), serde_json::to_vec_pretty(&r)?)?;
        timeline::write(&d)?;
        out.push(r);
    }
    Ok(out)
}
