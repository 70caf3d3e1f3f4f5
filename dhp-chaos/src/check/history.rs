//! The history index: protocol operations paired invoke → outcome, orphans,
//! spawns, faults and observations, from `history.jsonl`.

use crate::hist::{ActionKind, Ev, History};
use std::collections::{HashMap, HashSet};

/// A protocol operation: its invoke and (if recorded) its outcome.
#[derive(Debug, Clone)]
pub(crate) struct Op {
    pub(crate) process: String,
    pub(crate) pid: i64,
    pub(crate) op: String,
    pub(crate) hid: String,
    pub(crate) holder: String,
    pub(crate) fence: Option<i64>,
    pub(crate) next_n: Option<u64>,
    pub(crate) invoke_t: f64,
    /// `Some(true)` ok, `Some(false)` fail, `None` in flight when the process died.
    pub(crate) ok: Option<bool>,
    pub(crate) out_t: Option<f64>,
    /// Invoke and outcome times as a process with a faked clock read them
    /// (`t_clock`; `None` for the others).
    pub(crate) invoke_clock: Option<f64>,
    pub(crate) out_clock: Option<f64>,
    pub(crate) seq: Option<i64>,
    pub(crate) error: Option<String>,
    /// It failed while the database was down or its backend was being
    /// terminated: it may or may not have happened (`ok` is then `None`,
    /// like an operation its process died in).
    pub(crate) indeterminate: bool,
}

impl Op {
    /// The operation as its history line names it, outcome not yet known.
    pub(crate) fn invoked(e: &Ev, op: &str) -> Op {
        Op {
            process: e.process().into(),
            pid: e.pid(),
            op: op.into(),
            hid: e.hid().unwrap_or("").into(),
            holder: e.s("holder").unwrap_or(e.process()).into(),
            fence: e.i("fence"),
            next_n: e.u("next_n"),
            invoke_t: e.t(),
            ok: None,
            out_t: None,
            invoke_clock: e.get("t_clock").and_then(serde_json::Value::as_f64),
            out_clock: None,
            seq: None,
            error: None,
            indeterminate: false,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Orphan {
    pub(crate) t: f64,
    pub(crate) hid: String,
    /// `lease-expired`, `worker-died` or `stalled` (builtin supervisors).
    pub(crate) reason: Option<String>,
    pub(crate) previous_holder: Option<String>,
    pub(crate) previous_fence: Option<i64>,
    pub(crate) fence: Option<i64>,
    /// The checkpoints the orphan's own transaction saw (`checkpoints`, the
    /// next seq): seqs below it were committed before the orphan.
    pub(crate) checkpoints: Option<i64>,
    pub(crate) supervisor: String,
}

#[derive(Debug, Clone)]
pub(crate) struct SpawnInfo {
    pub(crate) imp: String,
    pub(crate) role: String,
    pub(crate) hid: Option<String>,
}

pub(crate) struct Index<'a> {
    pub(crate) ops: Vec<Op>,
    pub(crate) orphans: Vec<Orphan>,
    pub(crate) spawns: HashMap<String, SpawnInfo>,
    pub(crate) faults: Vec<&'a Ev>,
    pub(crate) observes: Vec<&'a Ev>,
    pub(crate) provisions: Vec<&'a Ev>,
    pub(crate) resumes: Vec<&'a Ev>,
    /// Network faults of a `--hosts` round (partition start and heal).
    pub(crate) nemesis: Vec<&'a Ev>,
    /// Link toxics cleared (`link-heal`, with the `fault_id` they end).
    pub(crate) heals: Vec<&'a Ev>,
    /// The fault schedule as drawn (`schedule`, `crate::coverage::schedule`).
    pub(crate) schedule: Vec<&'a Ev>,
    /// `--steer`'s choices (`steer`) and round extensions (`round` phases `extend`, `extend-bound`).
    pub(crate) steer: Vec<&'a Ev>,
    /// process name → time its exit was observed
    pub(crate) exits: HashMap<String, f64>,
    /// The `exit` events themselves (code, signal), in history order.
    pub(crate) exit_events: Vec<&'a Ev>,
    pub(crate) processes_with_history: HashSet<String>,
    /// Processes started under a faked clock → their `faketime` spec.
    pub(crate) clock: HashMap<String, String>,
    /// The same processes → (spawn time, skew), to convert their timestamps.
    pub(crate) skews: HashMap<String, (f64, crate::clock::Skew)>,
}

pub(crate) fn index(h: &History) -> Index<'_> {
    let mut ops: Vec<Op> = Vec::new();
    let mut open: HashMap<(i64, String, String), usize> = HashMap::new();
    let mut ix = Index {
        ops: Vec::new(),
        orphans: Vec::new(),
        spawns: HashMap::new(),
        faults: Vec::new(),
        observes: Vec::new(),
        provisions: Vec::new(),
        resumes: Vec::new(),
        nemesis: Vec::new(),
        heals: Vec::new(),
        schedule: Vec::new(),
        steer: Vec::new(),
        exits: HashMap::new(),
        exit_events: Vec::new(),
        processes_with_history: HashSet::new(),
        clock: HashMap::new(),
        skews: HashMap::new(),
    };
    for e in &h.events {
        if e.is_chaos() {
            match e.op() {
                "spawn" => {
                    if let (Some(name), Some(spec)) = (e.s("name"), e.s("faketime")) {
                        ix.clock.insert(name.to_string(), spec.to_string());
                        if let Some(skew) = e.get("clock").and_then(|c| serde_json::from_value(c.clone()).ok()) {
                            ix.skews.insert(name.to_string(), (e.t(), skew));
                        }
                    }
                    if let Some(name) = e.s("name") {
                        ix.spawns.insert(
                            name.to_string(),
                            SpawnInfo {
                                imp: e.s("impl").unwrap_or("").into(),
                                role: e.s("role").unwrap_or("").into(),
                                hid: e.hid().map(String::from),
                            },
                        );
                    }
                }
                "fault" => ix.faults.push(e),
                "observe" => ix.observes.push(e),
                "provision" => ix.provisions.push(e),
                "resume" => ix.resumes.push(e),
                "nemesis" => ix.nemesis.push(e),
                "link-heal" => ix.heals.push(e),
                "schedule" => ix.schedule.push(e),
                "steer" => ix.steer.push(e),
                "round" if matches!(e.s("phase"), Some("extend" | "extend-bound")) => ix.steer.push(e),
                "exit" => {
                    if let Some(name) = e.s("name") {
                        ix.exits.insert(name.to_string(), e.t());
                    }
                    ix.exit_events.push(e);
                }
                _ => {}
            }
            continue;
        }
        ix.processes_with_history.insert(e.process().to_string());
        match (e.op(), e.ty()) {
            ("supervise", "ok") if e.action().is_some_and(ActionKind::is_orphan_rule) => {
                ix.orphans.push(Orphan {
                    t: e.t(),
                    hid: e.hid().unwrap_or("").into(),
                    reason: e.s("reason").map(String::from),
                    previous_holder: e.s("previous_holder").map(String::from),
                    previous_fence: e.i("previous_fence"),
                    fence: e.i("fence"),
                    checkpoints: e.i("checkpoints"),
                    supervisor: e.process().into(),
                });
            }
            (op @ ("claim" | "recover" | "checkpoint" | "complete"), ty) => {
                let key = (e.pid(), op.to_string(), e.hid().unwrap_or("").to_string());
                match ty {
                    "invoke" => {
                        ops.push(Op::invoked(e, op));
                        open.insert(key, ops.len() - 1);
                    }
                    "ok" | "fail" => {
                        let i = match open.remove(&key) {
                            Some(i) => i,
                            None => {
                                // outcome without invoke: keep it as its own op
                                ops.push(Op::invoked(e, op));
                                ops.len() - 1
                            }
                        };
                        let o = &mut ops[i];
                        o.ok = Some(ty == "ok");
                        o.out_t = Some(e.t());
                        o.out_clock = e.get("t_clock").and_then(serde_json::Value::as_f64);
                        if let Some(f) = e.i("fence") {
                            o.fence = Some(f);
                        }
                        o.seq = e.i("seq");
                        if o.next_n.is_none() {
                            o.next_n = e.u("next_n");
                        }
                        o.error = e.s("error").map(String::from);
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    ix.ops = ops;
    ix
}
