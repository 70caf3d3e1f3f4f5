//! The coverage ledger: what a round (and a run) actually exercised, from
//! what the harness saw itself — its own fault, spawn, provision and exit
//! records, the store audit, the workload service's record and its store
//! monitor — never from the judged processes' history lines.
//!
//! Three parts: a matrix protocol moment × fault (where in the protocol
//! each process fault landed), the fault kinds that fired, and the
//! situations reached (a worker killed mid-chunk, a woken zombie that
//! tried to write, racing recoverers, …). Each entry is applicable to the
//! round's configuration or says why not. Applicable *targets* that no
//! round reached make the run `HELD, NOT COVERED` (exit
//! [`EXIT_NOT_COVERED`]) unless `--allow-uncovered` names them.

mod applicable;
mod moments;
mod render;
pub mod schedule;
mod situations;
pub mod steer;

pub use render::{html, matrix_text, run_lines, timeline_lines};

use crate::check::Ctx;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Exit code of a run whose invariants all held (or were only known
/// weaknesses, allowed) while an applicable coverage target was never reached.
pub const EXIT_NOT_COVERED: i32 = 4;

/// One cell of the moment × fault matrix.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Cell {
    /// The protocol moment ([`Moment::name`]).
    pub moment: String,
    /// The fault column ([`Column::name`]).
    pub fault: String,
    /// Faults of this column that landed at this moment.
    pub hits: u64,
    /// Why this cell cannot be hit in this configuration (`None`: it can).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_applicable: Option<String>,
}

/// A fault kind or a situation: how often it happened.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Tally {
    /// `kill-worker`, `zombies`, `races`, …
    pub name: String,
    /// How many times the harness saw it.
    pub hits: u64,
    /// A target: the verdict says NOT COVERED when it is applicable and 0.
    pub target: bool,
    /// Why it cannot happen in this configuration (`None`: it can).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_applicable: Option<String>,
    /// What the harness counted it from.
    pub source: String,
}

impl Tally {
    /// Applicable, a target, and never reached.
    pub fn missed(&self) -> bool {
        self.target && self.not_applicable.is_none() && self.hits == 0
    }
}

/// The ledger of one round, or of a run (merged).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Coverage {
    /// Protocol moment × fault column, every cell.
    pub matrix: Vec<Cell>,
    /// Fault kinds: fired how often (targets: every kind of the mix).
    pub faults: Vec<Tally>,
    /// Situations reached.
    pub situations: Vec<Tally>,
    /// `--allow-uncovered` as the round was run (names, or `all`).
    #[serde(default)]
    pub allowed: Vec<String>,
    /// The fault schedule re-derived from the seed (`None`: none recorded).
    /// Merged: steps summed, matched only if every round matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<schedule::ScheduleCheck>,
    /// What `--steer` did (`None`: it was off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steering: Option<Steering>,
}

/// What `--steer` did in a round (or, merged, a run).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Steering {
    /// Faults, victims and races the steerer chose (`steer` events).
    pub choices: u64,
    /// Handoffs added because the work ended before the targets were met.
    pub extensions: u64,
    /// Targets still missing when the extension bound was reached.
    pub missing_at_bound: Vec<String>,
}

/// Where in the protocol a process fault landed (rows of the matrix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Moment {
    /// A claiming worker before the store granted it the handoff.
    Claim,
    /// A worker holding a lease (its heartbeat stops): every fault on a holder.
    Renew,
    /// A chunk served to the holder, its checkpoint not yet committed.
    CheckpointBeforeAck,
    /// The last chunk served was committed; the next not yet asked for.
    CheckpointAfterAck,
    /// Every chunk committed, the completion not yet.
    Complete,
    /// A supervisor hit while a faulted worker's orphan was still due.
    Orphan,
    /// A recovering worker before the store granted it the handoff.
    Recover,
    /// The leader supervisor hit (its successor must take over).
    LeaderHandover,
}

impl Moment {
    /// Every moment, in matrix order.
    pub const ALL: [Moment; 8] = [
        Moment::Claim,
        Moment::Renew,
        Moment::CheckpointBeforeAck,
        Moment::CheckpointAfterAck,
        Moment::Complete,
        Moment::Orphan,
        Moment::Recover,
        Moment::LeaderHandover,
    ];
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Moment::Claim => "claim",
            Moment::Renew => "renew",
            Moment::CheckpointBeforeAck => "checkpoint-before-ack",
            Moment::CheckpointAfterAck => "checkpoint-after-ack",
            Moment::Complete => "complete",
            Moment::Orphan => "orphan",
            Moment::Recover => "recover",
            Moment::LeaderHandover => "leader-handover",
        }
    }
}

/// The process faults the matrix places (columns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Column {
    /// The injector's SIGKILL.
    Sigkill,
    /// The injector's SIGSTOP (or a reference worker's pause point).
    Sigstop,
    /// A failpoint armed by the harness that killed its worker.
    Failpoint,
    /// A SIGKILL the harness fired when it saw an armed commit in the store audit (`kill-at-commit`).
    AtCommit,
}

impl Column {
    /// Every column, in matrix order.
    pub const ALL: [Column; 4] = [Column::Sigkill, Column::Sigstop, Column::Failpoint, Column::AtCommit];
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Column::Sigkill => "SIGKILL",
            Column::Sigstop => "SIGSTOP",
            Column::Failpoint => "failpoint",
            Column::AtCommit => "at-commit",
        }
    }
}

/// The round's ledger from its checked context; `faults_by_kind` is the
/// report's count (the harness's fault records), `stalls` the monitor's.
pub(crate) fn of_round(cx: &Ctx<'_>, faults_by_kind: &BTreeMap<String, u64>, stalls: usize) -> Coverage {
    let cfg = &cx.meta["config"];
    let app = applicable::Config::of(cfg);
    let hits = moments::place(cx);
    let mut fired = faults_by_kind.clone();
    // clock faults are spawns under libfaketime (the harness's spawn records)
    fired.insert("clock".into(), cx.ix.clock.len() as u64);
    let matrix = Moment::ALL
        .iter()
        .flat_map(|m| Column::ALL.iter().map(move |c| (*m, *c)))
        .map(|(m, c)| Cell {
            moment: m.name().into(),
            fault: c.name().into(),
            hits: hits.get(&(m, c)).copied().unwrap_or(0),
            not_applicable: app.cell(m, c),
        })
        .collect();
    let mut c = Coverage {
        matrix,
        faults: app.fault_tallies(&fired),
        situations: situations::reached(cx, &app, stalls),
        schedule: schedule::check(cfg, &schedule_events(cx)),
        steering: (cfg["steer"].as_bool() == Some(true)).then(|| steering(cx)),
        allowed: cfg["allow_uncovered"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(String::from))
            .collect(),
    };
    if let Some(scenario) = cx.meta["scenario"].as_str() {
        // a scenario places its own faults at moments it chose (its plan):
        // what it reached is reported, not demanded of the seeded mix
        for t in c.faults.iter_mut().chain(c.situations.iter_mut()) {
            if t.target {
                t.target = false;
                t.source = format!("{} (--scenario {scenario}: its own fault script; not a target)", t.source);
            }
        }
    }
    c
}

/// The round's `steer` and `extend` records, counted.
fn steering(cx: &Ctx<'_>) -> Steering {
    let mut s = Steering::default();
    for e in &cx.ix.steer {
        match (e.op(), e.s("phase")) {
            ("steer", _) => s.choices += 1,
            (_, Some("extend")) => s.extensions += 1,
            (_, _) => {
                let m = e.get("missing").and_then(serde_json::Value::as_array);
                s.missing_at_bound = m.into_iter().flatten().filter_map(|v| v.as_str().map(String::from)).collect();
            }
        }
    }
    s
}

/// The harness's `schedule` records of the round, in order.
fn schedule_events<'a>(cx: &'a Ctx<'_>) -> Vec<&'a crate::hist::Ev> {
    cx.ix.schedule.to_vec()
}

impl Coverage {
    /// Applicable targets never reached, `--allow-uncovered` or not.
    pub fn missed(&self) -> Vec<String> {
        self.faults.iter().chain(&self.situations).filter(|t| t.missed()).map(|t| t.name.clone()).collect()
    }

    /// [`Coverage::missed`] less what `--allow-uncovered` named.
    pub fn uncovered(&self) -> Vec<String> {
        self.missed().into_iter().filter(|n| !allowed(&self.allowed, n)).collect()
    }

    /// Several rounds as one: hits summed; an entry applicable when it was
    /// in any round (its reason kept from the first round otherwise).
    pub fn merge<'a>(all: impl IntoIterator<Item = &'a Coverage>) -> Coverage {
        let mut out = Coverage::default();
        for c in all {
            merge_cells(&mut out.matrix, &c.matrix);
            merge_tallies(&mut out.faults, &c.faults);
            merge_tallies(&mut out.situations, &c.situations);
            if let Some(s) = &c.schedule {
                let m = out.schedule.get_or_insert(schedule::ScheduleCheck { matched: true, ..Default::default() });
                m.steps += s.steps;
                m.matched &= s.matched;
                if m.first_difference.is_none() {
                    m.first_difference.clone_from(&s.first_difference);
                }
            }
            if let Some(st) = &c.steering {
                let m = out.steering.get_or_insert_with(Steering::default);
                m.choices += st.choices;
                m.extensions += st.extensions;
                for x in &st.missing_at_bound {
                    if !m.missing_at_bound.contains(x) {
                        m.missing_at_bound.push(x.clone());
                    }
                }
            }
            for a in &c.allowed {
                if !out.allowed.contains(a) {
                    out.allowed.push(a.clone());
                }
            }
        }
        out
    }
}

fn merge_cells(into: &mut Vec<Cell>, from: &[Cell]) {
    for c in from {
        match into.iter_mut().find(|x| x.moment == c.moment && x.fault == c.fault) {
            Some(x) => {
                x.hits += c.hits;
                if c.not_applicable.is_none() {
                    x.not_applicable = None;
                }
            }
            None => into.push(c.clone()),
        }
    }
}

fn merge_tallies(into: &mut Vec<Tally>, from: &[Tally]) {
    for t in from {
        match into.iter_mut().find(|x| x.name == t.name) {
            Some(x) => {
                x.hits += t.hits;
                x.target |= t.target;
                if t.not_applicable.is_none() {
                    x.not_applicable = None;
                }
            }
            None => into.push(t.clone()),
        }
    }
}

/// `name` is covered by the `--allow-uncovered` list (`all` allows every one).
pub fn allowed(list: &[String], name: &str) -> bool {
    list.iter().any(|a| a == "all" || a == name)
}

/// Every name `--allow-uncovered` accepts besides `all`: the situations and
/// the fault kinds (as reported).
pub fn target_names() -> Vec<String> {
    let mut v: Vec<String> = situations::NAMES.iter().map(|s| s.to_string()).collect();
    v.extend(crate::config::FaultKind::ALL.iter().map(|k| k.name().to_string()));
    v.push("failpoint".into());
    v.push("clock".into());
    v
}

/// Check `--allow-uncovered` names; an unknown one is an error naming the known ones.
pub fn parse_allowed(names: &[String]) -> crate::error::Result<Vec<String>> {
    let known = target_names();
    for n in names {
        if n != "all" && !known.contains(n) {
            return Err(crate::Error::Usage(format!(
                "--allow-uncovered: unknown coverage target {n:?} (known: all, {})",
                known.join(", ")
            )));
        }
    }
    Ok(names.to_vec())
}

/// An invariant whose exercising situation never happened is not
/// exercised, whatever it counted: `zombies` checks woken replaced
/// workers, but only one that tried to write puts its fence to the test.
pub(crate) fn demote(verdicts: &mut [crate::check::Verdict], c: &Coverage) {
    let tried = c.situations.iter().find(|t| t.name == "zombies").map_or(0, |t| t.hits);
    let Some(v) = verdicts.iter_mut().find(|v| v.name == crate::check::Invariant::Zombies.name()) else { return };
    if tried == 0 && v.status == "held" {
        v.notes.push(format!(
            "{} woken replaced worker(s) checked, none of which attempted a write after waking (workload record, store audit): not exercised",
            v.checked
        ));
        v.status = "not-exercised".into();
        v.checked = 0;
    }
}

#[cfg(test)]
mod tests;
