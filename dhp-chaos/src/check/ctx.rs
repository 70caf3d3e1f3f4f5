//! What every invariant reads: the round's metadata, the store, the history
//! index, and the per-handoff facts derived from them once (who wrote each
//! committed checkpoint, the fence grants, who completed it).

use super::faults::{self, FaultWalk};
use super::history::{Index, Op};
use super::load::{Ckpt, Handoff};
use super::saved_config::SavedConfig;
use super::CHECK_THEN_WRITE;
use crate::config::Ship;
use crate::round::Paths;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// Everything the invariants check, read from one round directory.
pub struct Ctx<'a> {
    pub(crate) paths: Paths,
    pub(crate) meta: &'a Value,
    /// The round's configuration as the harness saved it (`round.json`'s
    /// `config`), typed: its defaults are the configuration's own.
    pub(crate) cfg: &'a SavedConfig,
    pub(crate) ix: &'a Index<'a>,
    pub(crate) store: &'a BTreeMap<String, Handoff>,
    /// The handoffs the round dispatched, in dispatch order.
    pub(crate) hids: Vec<String>,
    /// Checkpoints were shipped over TCP (a peer log and a local buffer).
    pub(crate) tcp: bool,
    /// Facts of every dispatched census handoff that is in the store.
    pub(crate) facts: BTreeMap<String, Facts<'a>>,
    /// Handoffs whose trouble provably starts at a reference worker that
    /// was stopped between its ownership check and its write (see
    /// [`Ctx::reference_late_writes`]); seeds the taint of every invariant.
    pub(crate) pre_taint: HashMap<String, String>,
    /// The injected faults, walked once.
    pub(crate) faults: FaultWalk,
    /// What the link proxy recorded (`None`: no proxy record in this round).
    pub(crate) acks: Option<Vec<crate::proxy::Ack>>,
    /// The store's commit order as the harness's triggers recorded it (`None`: no audit).
    pub(crate) audit: Option<&'a super::audit::AuditIx>,
    /// The processes under test were given the history file and their lines are read.
    pub(crate) history_on: bool,
    /// The harness's workload service's record (`None`: the round ran none, `--workload local`).
    pub(crate) workload: Option<crate::workload::Workload>,
}

/// Who wrote each committed checkpoint, as far as the history tells.
#[derive(Debug, Clone)]
pub(crate) struct Writer {
    pub(crate) holder: String,
    pub(crate) process: String,
    pub(crate) fence: i64,
    pub(crate) invoke_t: f64,
    pub(crate) acknowledged: bool,
}

/// Who committed a handoff's completion.
#[derive(Debug, Clone)]
pub(crate) struct Completer {
    pub(crate) holder: String,
    pub(crate) process: String,
    pub(crate) fence: Option<i64>,
    pub(crate) invoke_t: f64,
    /// It recorded `ok`; otherwise it died after committing and is the one
    /// in-flight complete that could have made the commit.
    pub(crate) acknowledged: bool,
}

/// One census handoff's derived facts.
pub(crate) struct Facts<'a> {
    pub(crate) h: &'a Handoff,
    pub(crate) lo: u64,
    pub(crate) hi: u64,
    pub(crate) chunk: u64,
    /// The census state after each chunk: (next_n, count, total).
    pub(crate) exp_chain: Vec<(u64, u64, u64)>,
    /// Every worker spawned for it recorded history.
    pub(crate) hist_complete: bool,
    /// Its operations, in history order.
    pub(crate) ops: Vec<&'a Op>,
    /// seq → writer (acknowledged, or the one in-flight invoke that matches).
    pub(crate) writers: BTreeMap<i64, Writer>,
    /// Successful claims and recovers, in outcome order.
    pub(crate) grants: Vec<&'a Op>,
    /// fence → the holder it was (last) granted to.
    pub(crate) fence_holder: HashMap<i64, String>,
    /// When completed: `completed_at` of the envelope, as epoch seconds.
    pub(crate) completed_at: Option<f64>,
    /// When completed: who committed it, if the history tells.
    pub(crate) completer: Option<Completer>,
}

impl Facts<'_> {
    /// Who the store says committed the completion: the envelope's
    /// `execution.runner_id` and `execution.fence` (`None` when it does not
    /// say both, e.g. not completed).
    pub(crate) fn stored_completer(&self) -> Option<(&str, i64)> {
        self.completed_at?;
        let e = self.h.env.get("execution")?;
        Some((e.get("runner_id")?.as_str()?, e.get("fence")?.as_i64()?))
    }

    /// An acknowledged complete that cannot be the commit that stands (the
    /// protocol's idempotent no-op): it began after the completion
    /// committed; or it was answered only after that commit and is not the
    /// one the store records — a stale complete invoked while the holder's
    /// completion was committing waits for the write lock, then finds the
    /// handoff completed. (A stale complete that did commit, and was
    /// answered before a second completion overwrote the record, still
    /// counts as a commit; only one answered within that second
    /// completion's own few milliseconds would pass unseen.)
    pub(crate) fn late_complete(&self, o: &Op) -> bool {
        let Some(ca) = self.completed_at else { return false };
        if ca + 1e-6 < o.invoke_t {
            return true;
        }
        let answered_after = o.out_t.is_some_and(|t| t > ca + 1e-6);
        answered_after && self.stored_completer().is_some_and(|(h, fe)| !(o.holder == h && o.fence == Some(fe)))
    }
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(
        dir: &std::path::Path,
        meta: &'a Value,
        cfg: &'a SavedConfig,
        ix: &'a Index<'a>,
        store: &'a BTreeMap<String, Handoff>,
        audit: Option<&'a super::audit::AuditIx>,
    ) -> Ctx<'a> {
        let history_on = cfg.impl_history;
        let hids: Vec<String> = meta["hids"]
            .as_array()
            .map(|a| a.iter().filter_map(|h| h.as_str().map(String::from)).collect())
            .unwrap_or_default();
        let tcp = matches!(cfg.ship, Ship::Tcp | Ship::TcpAsync);
        let mut cx = Ctx {
            paths: Paths::new(dir),
            meta,
            cfg,
            ix,
            store,
            hids,
            tcp,
            facts: BTreeMap::new(),
            pre_taint: HashMap::new(),
            faults: FaultWalk::default(),
            acks: None,
            audit,
            history_on,
            workload: crate::workload::load(dir).ok().flatten(),
        };
        cx.acks =
            cx.paths.proxy_record.exists().then(|| crate::proxy::load_acks(&cx.paths.proxy_record).unwrap_or_default());
        cx.pre_taint = cx.reference_late_writes();
        let mut facts = BTreeMap::new();
        for hid in &cx.hids {
            if let Some(f) = store.get(hid).and_then(|h| cx.facts_of(h)) {
                facts.insert(hid.clone(), f);
            }
        }
        cx.facts = facts;
        cx.faults = faults::walk(&cx);
        cx
    }

    /// A standby's round: how many of `hid`'s checkpoints it ingested from
    /// the dead host's shipped log (written on that host, not here); 0 otherwise.
    pub(crate) fn ingested(&self, hid: &str) -> i64 {
        self.meta["standby_of"]["ingested"][hid].as_i64().unwrap_or(0)
    }

    /// This round's host died and `hid` went to the standby: how many of
    /// the peer log's checkpoints the standby ingested (the lines from that
    /// seq on are the standby's, checked in its round). `None`: not moved,
    /// or a run recorded before the count was (then only the store's top
    /// seq may be the standby's).
    pub(crate) fn standby_ingested(&self, hid: &str) -> Option<i64> {
        if !self.moved_to_standby(hid) {
            return None;
        }
        self.meta["host_death"]["ingested"][hid].as_i64()
    }

    /// This round's host died and `hid` was handed to the standby (whose
    /// later checkpoints continue the same peer log).
    pub(crate) fn moved_to_standby(&self, hid: &str) -> bool {
        self.meta["host_death"]["moved"].as_array().is_some_and(|m| m.iter().any(|h| h.as_str() == Some(hid)))
    }

    /// `completed_at` is stamped by the completing process's clock: when
    /// that clock was faked (no complete on a real clock spans it, one on
    /// a faked clock does, in that clock), put it on the real clock.
    fn real_completed_at(&self, ops: &[&Op], ca: f64) -> f64 {
        let spans = |a: f64, b: Option<f64>| ca + 1e-3 >= a && b.is_none_or(|b| ca <= b + 1e-3);
        let completes = || ops.iter().filter(|o| o.op == "complete");
        if completes().any(|o| o.invoke_clock.is_none() && spans(o.invoke_t, o.out_t)) {
            return ca;
        }
        completes()
            .find_map(|o| {
                let ic = o.invoke_clock?;
                let (start, skew) = self.ix.skews.get(&o.process)?;
                spans(ic, o.out_clock).then(|| skew.real_time(*start, ca))
            })
            .unwrap_or(ca)
    }

    /// The process ran under a faked clock (its history times are its own clock's).
    pub(crate) fn clock_faked(&self, process: &str) -> bool {
        self.ix.clock.contains_key(process)
    }

    pub(crate) fn imp_of(&self, process: &str) -> String {
        self.ix.spawns.get(process).map(|s| s.imp.clone()).unwrap_or_else(|| "unknown".into())
    }

    /// Every worker spawned for `hid` recorded history (or never got to).
    pub(crate) fn history_complete(&self, hid: &str) -> bool {
        self.history_on
            && self
                .ix
                .spawns
                .iter()
                .filter(|(_, s)| s.role == "worker" && s.hid.as_deref() == Some(hid))
                .all(|(name, s)| s.imp != "cmd" || self.ix.processes_with_history.contains(name))
    }

    /// The orphans the store audit recorded: the ownership change, the
    /// orphan reason of the same transaction's envelope, and whether it
    /// parked the handoff in the DLQ instead.
    pub(crate) fn audit_orphans(&self) -> Vec<(super::audit::Transition, Option<String>, bool)> {
        let Some(a) = self.audit else { return Vec::new() };
        a.transitions()
            .iter()
            .filter(|t| t.kind == super::audit::Kind::Orphan)
            .map(|t| {
                let (reason, dlq) = a.orphan_outcome(t);
                (t.clone(), reason, dlq)
            })
            .collect()
    }

    /// The process named `name` was seen to exit by `t` (+ `slack` seconds).
    pub(crate) fn exited_by(&self, name: &str, t: f64, slack: f64) -> bool {
        self.ix.exits.get(name).is_some_and(|et| *et <= t + slack)
    }

    pub(crate) fn grants(&self, hid: &str) -> Vec<&Op> {
        let mut g: Vec<&Op> = self
            .ix
            .ops
            .iter()
            .filter(|o| o.hid == hid && (o.op == "claim" || o.op == "recover") && o.ok == Some(true))
            .collect();
        g.sort_by(|a, b| a.out_t.unwrap_or(a.invoke_t).total_cmp(&b.out_t.unwrap_or(b.invoke_t)));
        g
    }

    /// The earliest recorded time at which fence `f` of `hid` was superseded
    /// (a newer fence granted, or the handoff orphaned past it). Both are
    /// recorded after their commit, so an operation invoked later than this
    /// must be rejected.
    pub(crate) fn superseded_at(&self, hid: &str, f: i64) -> Option<(f64, String)> {
        let mut best: Option<(f64, String)> = None;
        for g in self.grants(hid) {
            if g.fence.is_some_and(|gf| gf > f) {
                let t = g.out_t.unwrap_or(g.invoke_t);
                if best.as_ref().is_none_or(|b| t < b.0) {
                    best = Some((t, format!("{} got fence {}", g.holder, g.fence.unwrap_or(-1))));
                }
            }
        }
        for o in &self.ix.orphans {
            if o.hid == hid && o.fence.is_some_and(|of| of > f) && best.as_ref().is_none_or(|b| o.t < b.0) {
                best = Some((o.t, format!("{} orphaned it to fence {}", o.supervisor, o.fence.unwrap_or(-1))));
            }
        }
        best
    }

    /// The time a stopped victim was woken (its first SIGCONT after the stop).
    pub(crate) fn woken_at(&self, victim: &str, stopped_t: f64) -> Option<f64> {
        self.ix
            .faults
            .iter()
            .find(|c| c.s("signal") == Some("CONT") && c.s("victim") == Some(victim) && c.t() >= stopped_t)
            .map(|c| c.t())
    }

    /// A reference worker stopped between its ownership check and its
    /// write, replaced, then woken: its write lands after the successor's
    /// grant. Those handoffs' violations are the reference's weakness.
    fn reference_late_writes(&self) -> HashMap<String, String> {
        let mut tainted = HashMap::new();
        for f in self.ix.faults.iter().filter(|f| f.s("signal") == Some("STOP")) {
            let victim = f.s("victim").unwrap_or("");
            let (Some(hid), Some(fence)) = (f.hid(), f.i("lease_fence")) else { continue };
            if self.imp_of(victim) != "python" {
                continue;
            }
            let Some(tc) = self.woken_at(victim, f.t()) else { continue };
            let replaced = self.superseded_at(hid, fence).is_some_and(|(t, _)| t < tc);
            let late_write = self.ix.ops.iter().any(|o| {
                o.process == victim
                    && o.invoke_t <= f.t()
                    && (o.op == "checkpoint" || o.op == "complete")
                    && o.ok == Some(true)
                    && o.out_t.is_some_and(|t| t >= tc)
                    && !self.committed_before_supersede(o, fence)
            });
            if replaced && late_write {
                tainted.entry(hid.to_string()).or_insert_with(|| CHECK_THEN_WRITE.to_string());
            }
        }
        tainted
    }

    /// The facts of a census handoff (`None`: its envelope carries no census task).
    fn facts_of(&self, h: &'a Handoff) -> Option<Facts<'a>> {
        let hid = h.hid.as_str();
        let (lo, hi, chunk) = census_task(&h.env)?;
        let ops: Vec<&'a Op> = self.ix.ops.iter().filter(|o| o.hid == hid).collect();
        let grants: Vec<&'a Op> = {
            let mut g: Vec<&'a Op> =
                ops.iter().copied().filter(|o| (o.op == "claim" || o.op == "recover") && o.ok == Some(true)).collect();
            g.sort_by(|a, b| a.out_t.unwrap_or(a.invoke_t).total_cmp(&b.out_t.unwrap_or(b.invoke_t)));
            g
        };
        let fence_holder = grants.iter().map(|g| (g.fence.unwrap_or(-1), g.holder.clone())).collect();
        let writers = attribute(h, &ops);
        let completed_at = h
            .env
            .pointer("/execution/completed_at")
            .and_then(Value::as_str)
            .and_then(super::iso_to_epoch)
            .map(|ca| self.real_completed_at(&ops, ca));
        let mut f = Facts {
            h,
            lo,
            hi,
            chunk,
            exp_chain: super::census::expected_chain(lo, hi, chunk),
            hist_complete: self.history_complete(hid),
            ops,
            writers,
            grants,
            fence_holder,
            completed_at,
            completer: None,
        };
        if h.status == "completed" {
            f.completer = self.completer(&f);
        }
        Some(f)
    }

    /// Who committed the completion: the process that recorded `ok` for a
    /// complete that was not the idempotent no-op, or — killed after
    /// committing (complete.after_commit) — the one complete in flight that
    /// was invoked before the commit, alive then, and not superseded when
    /// it began.
    fn completer(&self, f: &Facts<'a>) -> Option<Completer> {
        let hid = f.h.hid.as_str();
        let ca = f.completed_at;
        // the complete the store names (holder and fence), answered or cut after its commit
        if let Some((holder, fence)) = f.stored_completer() {
            let named = f
                .ops
                .iter()
                .find(|o| o.op == "complete" && o.ok != Some(false) && o.holder == holder && o.fence == Some(fence));
            if let Some(o) = named {
                return Some(Completer {
                    holder: o.holder.clone(),
                    process: o.process.clone(),
                    fence: o.fence,
                    invoke_t: o.invoke_t,
                    acknowledged: o.ok == Some(true),
                });
            }
        }
        let first_commit =
            f.ops.iter().filter(|o| o.op == "complete" && o.ok == Some(true)).find(|o| !f.late_complete(o));
        if let Some(o) = first_commit {
            return Some(Completer {
                holder: o.holder.clone(),
                process: o.process.clone(),
                fence: o.fence,
                invoke_t: o.invoke_t,
                acknowledged: true,
            });
        }
        let pend: Vec<&&Op> = f
            .ops
            .iter()
            .filter(|o| o.op == "complete" && o.ok.is_none())
            .filter(|o| ca.is_none_or(|ca| o.invoke_t <= ca + 1e-6))
            .filter(|o| ca.is_none_or(|ca| self.ix.exits.get(&o.process).is_none_or(|x| *x + 1e-6 >= ca)))
            .filter(|o| o.fence.is_none_or(|fe| self.superseded_at(hid, fe).is_none_or(|(t, _)| t >= o.invoke_t)))
            .collect();
        match pend.as_slice() {
            [o] => Some(Completer {
                holder: o.holder.clone(),
                process: o.process.clone(),
                fence: o.fence,
                invoke_t: o.invoke_t,
                acknowledged: false,
            }),
            _ => None,
        }
    }

    /// hid → next_n → the process that committed that chunk (`None`: not attributable).
    pub(crate) fn chunk_writers(&self, hid: &str) -> Option<HashMap<u64, Option<String>>> {
        let f = self.facts.get(hid)?;
        Some(
            f.h.ckpts
                .iter()
                .filter_map(|c| {
                    c.state["next_n"].as_u64().map(|n| (n, f.writers.get(&c.seq).map(|w| w.process.clone())))
                })
                .collect(),
        )
    }
}

/// The census task of an envelope: (lo, hi, chunk ≥ 1).
pub(crate) fn census_task(env: &Value) -> Option<(u64, u64, u64)> {
    let inline = |k: &str| env.pointer(&format!("/task/inputs/inline/{k}")).and_then(Value::as_u64);
    Some((inline("lo")?, inline("hi")?, inline("chunk")?.max(1)))
}

/// Attribute each committed checkpoint to the operation that wrote it: the
/// acknowledged checkpoint of that seq (the later one if two were
/// acknowledged), else the single in-flight checkpoint whose next_n matches.
fn attribute(h: &Handoff, ops: &[&Op]) -> BTreeMap<i64, Writer> {
    let mut writers: BTreeMap<i64, Writer> = BTreeMap::new();
    for o in ops.iter().filter(|o| o.op == "checkpoint" && o.ok == Some(true)) {
        let Some(seq) = o.seq else { continue };
        writers.insert(seq, writer(o, true));
    }
    for c in &h.ckpts {
        if writers.contains_key(&c.seq) {
            continue;
        }
        if let [o] = in_flight_writers(ops, c).as_slice() {
            writers.insert(c.seq, writer(o, false));
        }
    }
    writers
}

/// The checkpoints in flight (no outcome recorded) that computed `c`'s chunk.
pub(crate) fn in_flight_writers<'o>(ops: &[&'o Op], c: &Ckpt) -> Vec<&'o Op> {
    let nn = c.state["next_n"].as_u64();
    ops.iter().copied().filter(|o| o.op == "checkpoint" && o.ok.is_none() && o.next_n == nn).collect()
}

fn writer(o: &Op, acknowledged: bool) -> Writer {
    Writer {
        holder: o.holder.clone(),
        process: o.process.clone(),
        fence: o.fence.unwrap_or(-1),
        invoke_t: o.invoke_t,
        acknowledged,
    }
}
