//! Summary table and `results.json`.

use crate::check::{RoundReport, Stats};
use serde::Serialize;
use serde_json::Value;
use std::fmt::Write as _;

mod totals;
pub use totals::{totals, Totals};

fn ms(x: Option<f64>) -> String {
    match x {
        Some(v) => format!("{:.0}", v * 1000.0),
        None => "-".into(),
    }
}

fn lat(s: &Stats) -> String {
    if s.n == 0 {
        return "n=0".into();
    }
    format!("p50 {} ms, p99 {} ms, max {} ms (n={})", ms(s.p50), ms(s.p99), ms(s.max), s.n)
}

/// One round of a run as it ran: with `--hosts` its host (and standby)
/// reports together, which ran side by side over the same wall time.
#[derive(Debug, Clone, Serialize)]
pub struct RealRound {
    /// The round's index in its run.
    pub round: u32,
    /// The reports it made (1, or one per host and standby).
    pub reports: usize,
    /// SIGKILLs over all of them.
    pub kills: u64,
    /// Its fault phase, seconds of wall time (the longest of its reports').
    pub fault_phase_s: f64,
    /// `kills` per minute of `fault_phase_s`.
    pub kills_per_min: f64,
    /// Every invariant held in every report.
    pub held: bool,
}

/// The rounds of `reports` as they ran: the reports of one round index
/// (the hosts of a `--hosts` round) grouped, in order of first appearance.
pub fn real_rounds(reports: &[RoundReport]) -> Vec<RealRound> {
    let mut out: Vec<RealRound> = Vec::new();
    for r in reports {
        let i = match out.iter().position(|x| x.round == r.round) {
            Some(i) => i,
            None => {
                out.push(RealRound {
                    round: r.round,
                    reports: 0,
                    kills: 0,
                    fault_phase_s: 0.0,
                    kills_per_min: 0.0,
                    held: true,
                });
                out.len() - 1
            }
        };
        let x = &mut out[i];
        x.reports += 1;
        x.kills += r.kills;
        // the hosts' fault phases run side by side: the round's is the longest, not their sum
        x.fault_phase_s = x.fault_phase_s.max(r.fault_phase_s);
        x.held &= r.held;
    }
    for x in &mut out {
        x.kills_per_min = per_min(x.kills, x.fault_phase_s);
    }
    out
}

fn per_min(n: u64, s: f64) -> f64 {
    if s > 0.0 {
        n as f64 * 60.0 / s
    } else {
        0.0
    }
}

/// One line per round.
pub fn round_line(r: &RoundReport) -> String {
    dhp_markup::terminal(&round_line_text(r))
}

fn round_line_text(r: &RoundReport) -> String {
    format!(
        "{:>5} {:>20} {:>8}/{:<8} {:>6.1}s {:>6} {:>6.0} {:>5} {:>4}/{:<3} {:>5} {:>7} {:>7}  {}",
        match r.host {
            Some(h) => format!("{}/h{h}{}", r.round, if r.standby { "s" } else { "" }),
            None => r.round.to_string(),
        },
        r.seed,
        short_impl(&r.workers),
        short_impl(&r.supervisors),
        r.round_s,
        r.kills,
        r.kills_per_min,
        r.recoveries,
        r.completed,
        r.dlq,
        r.zombies.woken_after_replacement,
        ms(r.latencies.worker_kill.p50),
        ms(r.latencies.worker_kill.p99),
        if r.held && !r.unchecked.is_empty() {
            format!("UNCHECKED ({})", r.unchecked.join(","))
        } else if r.held {
            "HELD".to_string()
        } else if r.unexplained() == 0 {
            format!("VIOLATED ({} known reference weakness)", r.violations())
        } else {
            format!("VIOLATED ({})", r.violations())
        }
    )
}

fn short_impl(s: &str) -> String {
    if s.len() > 8 {
        format!("{}…", &s[..7])
    } else {
        s.to_string()
    }
}

/// The column header of [`round_line`].
pub fn header() -> String {
    format!(
        "{:>5} {:>20} {:>17} {:>7} {:>6} {:>6} {:>5} {:>8} {:>5} {:>7} {:>7}  {}",
        "round",
        "seed",
        "workers/sups",
        "time",
        "kills",
        "k/min",
        "recov",
        "done/dlq",
        "zomb",
        "det-p50",
        "det-p99",
        "invariants"
    )
}

/// The full summary printed at the end of a run; `table`: with the
/// per-round table (left out when the rounds were already printed).
pub fn summary(rounds: &[RoundReport], t: &Totals, table: bool) -> String {
    // violation messages quote judged text: nothing of it may reach the terminal as a control
    dhp_markup::terminal(&summary_text(rounds, t, table))
}

fn summary_text(rounds: &[RoundReport], t: &Totals, table: bool) -> String {
    let mut s = String::new();
    if table {
        let _ = writeln!(s, "\n{}", header());
        for r in rounds {
            let _ = writeln!(s, "{}", round_line(r));
        }
    }
    fault_lines(&mut s, t);
    env_lines(&mut s, rounds);
    latency_lines(&mut s, t);
    invariant_lines(&mut s, rounds, t);
    let _ = write!(s, "\n{}", crate::coverage::run_lines(&t.coverage));
    round_findings(&mut s, rounds);
    s
}

/// Faults by kind, kills and their rate (per round with `--hosts`),
/// handoffs and zombies.
fn fault_lines(s: &mut String, t: &Totals) {
    let _ = writeln!(s, "\nfaults by kind:");
    for (k, v) in &t.faults_by_kind {
        let _ = writeln!(s, "  {k:<32} {v:>6}");
    }
    let _ = writeln!(
        s,
        "kills: {} ({}) in {:.1} s of fault injection = {:.0} kills/min",
        t.kills,
        t.kills_by_role.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", "),
        t.fault_phase_s,
        t.kills_per_min
    );
    if t.reports > t.rounds {
        for r in &t.per_round {
            let _ = writeln!(
                s,
                "  round {} ({} host reports side by side): {} kills in {:.1} s of fault injection = {:.0} kills/min",
                r.round, r.reports, r.kills, r.fault_phase_s, r.kills_per_min
            );
        }
    }
    let _ = writeln!(
        s,
        "handoffs: {} completed, {} in the DLQ, of {}; recoveries {}, race losers {}, checkpoints {}",
        t.completed, t.dlq, t.handoffs, t.recoveries, t.race_losers, t.checkpoints
    );
    let _ = writeln!(
        s,
        "zombies woken after replacement: {} (fenced {}, wrote {})",
        t.zombies_woken, t.zombies_fenced, t.zombies_wrote
    );
}

/// What the environment faults did (links, clocks, disks, the database
/// link), when there were any.
fn env_lines(s: &mut String, rounds: &[RoundReport]) {
    let env = rounds.iter().map(|r| &r.env);
    let sum = |f: fn(&crate::check::EnvFacts) -> u64| env.clone().map(f).sum::<u64>();
    if sum(|e| e.clock_faked + e.link_indeterminate + e.disk_full + e.store_full + e.false_orphans) > 0 {
        let _ = writeln!(
            s,
            "link/clock/disk: {} shipped checkpoint(s) never acked (refused, or cut by a fault: indeterminate); {} process(es) on a faked clock, {} false orphan(s) ({} with a faked clock, costing {} chunk(s) of rework); disk full {} time(s), store disk full {} time(s)",
            sum(|e| e.link_indeterminate),
            sum(|e| e.clock_faked),
            sum(|e| e.false_orphans),
            sum(|e| e.false_orphans_skewed),
            sum(|e| e.skew_rework_chunks),
            sum(|e| e.disk_full),
            sum(|e| e.store_full)
        );
    }
    if rounds.iter().any(|r| r.faults_by_kind.contains_key("db-link")) {
        let waits: Vec<&crate::check::EnvFacts> =
            rounds.iter().map(|r| &r.env).filter(|e| e.db_link_blackhole_ops > 0).collect();
        let _ = writeln!(
            s,
            "db-link: {} orphan(s) caused (availability cost: liveness connection cut, or lease run out behind the link), {} worker operation(s) cut (indeterminate); blackhole → the held operation's reply: p50 {:.0} ms (the worst round's), max {:.0} ms (n={})",
            sum(|e| e.db_link_orphans),
            sum(|e| e.db_link_indeterminate),
            waits.iter().map(|e| e.db_link_blackhole_wait_p50_s).fold(0.0, f64::max) * 1000.0,
            waits.iter().map(|e| e.db_link_blackhole_wait_max_s).fold(0.0, f64::max) * 1000.0,
            sum(|e| e.db_link_blackhole_ops)
        );
    }
}

/// Detection latencies, store stalls and the work redone per fault.
fn latency_lines(s: &mut String, t: &Totals) {
    let _ = writeln!(s, "detection latency:");
    let _ = writeln!(s, "  worker SIGKILL → orphan   {}", lat(&t.detection_worker_kill));
    let _ = writeln!(
        s,
        "    steady state            {}  (others: {})",
        lat(&t.detection_worker_kill_steady),
        if t.disturbed_by.is_empty() {
            "none".to_string()
        } else {
            t.disturbed_by.iter().map(|(k, v)| format!("{v} {k}")).collect::<Vec<_>>().join(", ")
        }
    );
    let _ = writeln!(s, "  worker SIGKILL → successor's first checkpoint {}", lat(&t.kill_to_resume));
    let _ = writeln!(s, "  worker SIGSTOP → orphan   {}", lat(&t.detection_pause));
    let _ = writeln!(s, "  failpoint death → orphan  {}", lat(&t.detection_failpoint));
    let _ = writeln!(s, "  leader SIGKILL → new leader {}", lat(&t.leader_failover));
    if t.store_stalls > 0 {
        let _ = writeln!(
            s,
            "store stalls (a SIGSTOPped worker held the SQLite write lock, probed; nobody could commit): {} totalling {:.1} s, longest {:.1} s",
            t.store_stalls, t.store_stall_s, t.store_stall_max_s
        );
    }
    let _ = writeln!(
        s,
        "work redone per fault: at most {} chunk(s) a faulted worker computed but did not commit itself (limit 1)",
        t.rework_max_chunks
    );
}

/// The invariants' counts by status, then one line per invariant.
fn invariant_lines(s: &mut String, rounds: &[RoundReport], t: &Totals) {
    let count = |st: &str| t.invariants.values().filter(|v| v["status"] == st).count();
    let _ = writeln!(
        s,
        "invariants: {} held, {} violated, {} unchecked, {} not exercised{}",
        count("held"),
        count("violated"),
        count("unchecked"),
        count("not-exercised"),
        match rounds.iter().filter_map(|r| r.audit_events).sum::<usize>() {
            0 => String::new(),
            n => format!(" (store audit: {n} committed changes)"),
        }
    );
    let Some(last) = rounds.last() else { return };
    // names and descriptions from a round, counts from the totals; the
    // name column as wide as the longest name
    let w = last.invariants.iter().map(|i| i.name.chars().count()).max().unwrap_or(0);
    for i in &last.invariants {
        let tot = &t.invariants[i.name.as_str()];
        let v = tot["violations"].as_u64().unwrap_or(0);
        let kn = tot["known_reference_weakness"].as_u64().unwrap_or(0);
        let label = match (v, kn, tot["status"].as_str().unwrap_or("held")) {
            (0, 0, "unchecked") => "UNCHECKED".to_string(),
            (0, 0, "not-exercised") => "n/a".to_string(),
            (0, 0, _) => "held".to_string(),
            (0, k, _) => format!("KNOWN-REF×{k}"),
            (v, _, _) => format!("VIOLATED×{v}"),
        };
        let src: Vec<&str> = tot["sources"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        let _ = writeln!(
            s,
            "  {:<w$} {:<12} checked {:>7}  [{}]  {}",
            i.name,
            label,
            tot["checked"].as_u64().unwrap_or(0),
            src.join(","),
            i.what
        );
    }
}

/// Each round whose checks went unchecked, then each that violated one:
/// what, and how to allow or replay it.
fn round_findings(s: &mut String, rounds: &[RoundReport]) {
    for r in rounds.iter().filter(|r| r.held && !r.unchecked.is_empty()) {
        let _ = writeln!(s, "\nround {} (seed {}) UNCHECKED — {}:", r.round, r.seed, r.dir);
        for i in r.invariants.iter().filter(|i| r.unchecked.contains(&i.name)) {
            let _ = writeln!(s, "  [{}] {}", i.name, i.unchecked.as_deref().unwrap_or("unchecked"));
        }
        let _ = writeln!(s, "  allow with --allow-unchecked {}", r.unchecked.join(","));
    }
    for r in rounds.iter().filter(|r| !r.held) {
        let _ = writeln!(s, "\nround {} (seed {}) violations — {}:", r.round, r.seed, r.dir);
        for v in &r.survivors {
            let _ = writeln!(s, "  [survivor] {v}");
        }
        for i in r.invariants.iter().filter(|i| !i.held()) {
            let all: Vec<&String> = i.violations.iter().chain(i.known.iter()).collect();
            for v in all.iter().take(20) {
                let _ = writeln!(s, "  [{}] {v}", i.name);
            }
            if all.len() > 20 {
                let _ = writeln!(s, "  [{}] … {} more in round-report.json", i.name, all.len() - 20);
            }
        }
        let _ = writeln!(s, "  replay: {}", r.replay);
    }
}

/// The totals of the same seeds on two (or more) store engines, one column each.
pub fn side_by_side(cols: &[(String, Totals)]) -> String {
    type Row = (&'static str, fn(&Totals) -> String);
    let rows: [Row; 10] = [
        ("rounds held", |t| format!("{}/{}", t.rounds_held, t.rounds)),
        ("handoffs completed", |t| format!("{}/{}", t.completed, t.handoffs)),
        ("kills", |t| t.kills.to_string()),
        ("kills/min", |t| format!("{:.1}", t.kills_per_min)),
        ("detection p50 (ms)", |t| ms(t.detection_worker_kill.p50)),
        ("detection p99 (ms)", |t| ms(t.detection_worker_kill.p99)),
        ("leader failover p50 (ms)", |t| ms(t.leader_failover.p50)),
        ("recoveries", |t| t.recoveries.to_string()),
        ("violations", |t| t.violations.to_string()),
        ("undetected kills", |t| t.undetected.to_string()),
    ];
    let mut s = format!("{:<26}", "");
    for (name, _) in cols {
        let _ = write!(s, "{name:>14}");
    }
    s.push('\n');
    for (label, f) in rows {
        let _ = write!(s, "{label:<26}");
        for (_, t) in cols {
            let _ = write!(s, "{:>14}", f(t));
        }
        s.push('\n');
    }
    s
}

/// The run's exit code from its round reports: 2 a harness error, 1 a
/// violation (unless every one is a known reference weakness and
/// `allow_known` says so), 3 an invariant unchecked and not allowed, else 0.
pub fn exit_code(rounds: &[RoundReport], allow_known: bool, harness_error: bool) -> i32 {
    if harness_error || rounds.iter().any(|r| r.coverage.schedule.as_ref().is_some_and(|s| !s.matched)) {
        // a schedule the seed does not give back: the harness itself is not deterministic
        2
    } else if !rounds.iter().all(|r| r.held || (allow_known && r.unexplained() == 0)) {
        1
    } else if rounds.iter().any(|r| !r.unchecked.is_empty()) {
        3
    } else if !crate::coverage::Coverage::merge(rounds.iter().map(|r| &r.coverage)).uncovered().is_empty() {
        crate::coverage::EXIT_NOT_COVERED
    } else {
        0
    }
}

/// The last line of a run (and of `analyze`): `dhp-chaos: ALL INVARIANTS
/// HELD (N rounds)`, `dhp-chaos: INVARIANT VIOLATED`, … for exit `code`.
pub fn verdict_line(code: i32, rounds: &[RoundReport], t: &Totals) -> String {
    let n = match (t.rounds, t.reports) {
        (1, 1) => "1 round".to_string(),
        (r, n) if n > r => format!("{r} round{}, {n} host reports", if r == 1 { "" } else { "s" }),
        (r, _) => format!("{r} rounds"),
    };
    match code {
        0 if t.violations > 0 => format!(
            "dhp-chaos: only known reference weaknesses were hit ({} violations, allowed by --allow-known-reference-bugs)",
            t.violations
        ),
        0 if rounds.is_empty() => "dhp-chaos: no round ran".to_string(),
        0 if rounds.iter().any(|r| !r.unchecked_allowed.is_empty()) => format!(
            "dhp-chaos: NO VIOLATION ({n}); unchecked, allowed by --allow-unchecked: {}",
            rounds
                .iter()
                .flat_map(|r| r.unchecked_allowed.iter().cloned())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect::<Vec<_>>()
                .join(",")
        ),
        0 if !t.coverage.missed().is_empty() => format!(
            "dhp-chaos: NO VIOLATION ({n}); not covered, allowed by --allow-uncovered: {}",
            t.coverage.missed().join(", ")
        ),
        0 => format!("dhp-chaos: ALL INVARIANTS HELD ({n})"),
        1 => "dhp-chaos: INVARIANT VIOLATED".to_string(),
        crate::coverage::EXIT_NOT_COVERED => format!(
            "dhp-chaos: HELD, NOT COVERED: {} ({n}; exit {code}: never reached, so not shown to hold; --allow-uncovered NAME,… accepts it)",
            t.coverage.uncovered().join(", ")
        ),
        3 => "dhp-chaos: INVARIANT(S) UNCHECKED — no violation found, but not everything could be checked (exit 3)"
            .to_string(),
        _ => "dhp-chaos: HARNESS ERROR".to_string(),
    }
}
