//! Protocol situations a round reached, each counted from the harness's
//! own records: its fault, provision and exit events, the store audit, the
//! workload service's record and its store monitor.

use super::applicable::Config;
use super::{Column, Moment, Tally};
use crate::check::audit::Kind;
use crate::check::Ctx;
use crate::hist::Ev;

/// Every situation's name, in report order.
pub(super) const NAMES: [&str; 10] = [
    "mid-chunk-kill",
    "zombies",
    "races",
    "orphan-expiry",
    "orphan-death",
    "dlq",
    "budget-kill",
    "leader-replaced",
    "stall",
    "db-faults",
];

const AUDIT: &str = "store audit";

/// The first reason that holds, else `rest`.
fn why(reasons: &[(bool, &str)], rest: &Option<String>) -> Option<String> {
    reasons.iter().find(|(c, _)| *c).map(|(_, w)| w.to_string()).or_else(|| rest.clone())
}

fn tally(name: &str, hits: u64, target: bool, not_applicable: Option<String>, source: &str) -> Tally {
    Tally { name: name.into(), hits, target, not_applicable, source: source.into() }
}

/// The situations of one round.
pub(super) fn reached(cx: &Ctx<'_>, app: &Config, stalls: usize) -> Vec<Tally> {
    let no_audit = (!app.audit).then(|| "--no-audit: the harness cannot see the store's transitions".to_string());
    let local = !app.workload;
    let no_kill = !(app.worker_kills() || app.failpoints);
    let (expiry, death) = orphans(cx);
    vec![
        tally(
            NAMES[0],
            mid_chunk_kills(cx),
            true,
            why(
                &[
                    (no_kill, "no worker kill or failpoint in the fault mix"),
                    (local, "--workload local: the harness does not see which chunk a worker holds"),
                ],
                &no_audit,
            ),
            "harness fault records, workload record, store audit",
        ),
        tally(
            NAMES[1],
            zombie_write_attempts(cx),
            true,
            why(
                &[
                    (!app.pauses(), "no pause in the fault mix"),
                    (local, "--workload local: the harness cannot see a woken zombie ask for work"),
                ],
                &no_audit,
            ),
            "harness pause/wake records, store audit (replaced), workload record (asked for a chunk after waking)",
        ),
        tally(
            NAMES[2],
            races(cx),
            true,
            why(
                &[(app.race_rate <= 0.0, "--race-rate 0"), (!app.orphaning(), "no fault in the mix orphans a handoff")],
                &no_audit,
            ),
            "harness provision records (2–3 recoverers started at once), store audit (one recovered)",
        ),
        tally(
            NAMES[3],
            expiry,
            true,
            why(&[(!app.pauses(), "no pause in the fault mix")], &no_audit),
            "store audit (orphan of a holder the harness had not seen exit)",
        ),
        tally(
            NAMES[4],
            death,
            true,
            why(&[(no_kill, "no worker kill or failpoint in the fault mix")], &no_audit),
            "store audit (orphan), harness exit records (the holder had died)",
        ),
        tally(
            NAMES[5],
            parked(cx, true),
            true,
            why(
                &[
                    (app.dlq_handoffs == 0, "--dlq-handoffs 0"),
                    (!app.orphaning(), "no fault in the mix orphans a handoff"),
                ],
                &no_audit,
            ),
            &format!("{AUDIT} (a handoff parked failed after max_attempts {})", app.max_attempts_dlq),
        ),
        tally(
            NAMES[6],
            parked(cx, false),
            false,
            Some("the harness dispatches no step, spend or wall-clock budget a handoff could overrun".into()),
            AUDIT,
        ),
        tally(
            NAMES[7],
            leaders_replaced(cx),
            true,
            why(&[(!app.leader_kills(), "no kill-leader or kill-multi in the fault mix")], &no_audit),
            "harness fault records (leader killed), store audit (leadership row taken by another)",
        ),
        tally(
            NAMES[8],
            stalls as u64,
            false,
            why(&[(!app.pauses(), "no pause in the fault mix"), (!app.sqlite, "stalls are measured on SQLite only")], &None),
            "harness store monitor (a stopped worker holding the write lock); not a target: it needs a pause inside a write",
        ),
        tally(
            NAMES[9],
            db_faults(cx),
            !app.sqlite && app.mix.iter().any(|k| k.starts_with("db-")),
            why(&[(app.sqlite, "the SQLite store has no database server to fault")], &None),
            "harness fault records (db-* kinds)",
        ),
    ]
}

/// Injector SIGKILLs and failpoint kills of a worker holding a served,
/// uncommitted chunk.
fn mid_chunk_kills(cx: &Ctx<'_>) -> u64 {
    let placed = super::moments::place_each(cx);
    placed.iter().filter(|(_, col, ms)| *col != Column::Sigstop && ms.contains(&Moment::CheckpointBeforeAck)).count()
        as u64
}

/// Workers the harness stopped, woken after the store audit shows their
/// `(holder, fence)` replaced, that then asked the workload service for a
/// chunk or had a checkpoint committed: a write attempt the fence must stop.
fn zombie_write_attempts(cx: &Ctx<'_>) -> u64 {
    let (Some(a), Some(w)) = (cx.audit, &cx.workload) else { return 0 };
    let stopped = cx.ix.faults.iter().filter(|f| f.s("signal") == Some("STOP"));
    stopped
        .filter(|f| {
            let (Some(victim), Some(hid), Some(fence)) = (f.s("victim"), f.hid(), f.i("lease_fence")) else {
                return false;
            };
            let Some(tc) = cx.woken_at(victim, f.t()) else { return false };
            if a.superseded(hid, victim, fence).is_none_or(|(t, _)| t >= tc) {
                return false;
            }
            let asked = w.served_to(victim, hid).any(|s| s.t >= tc);
            let committed = a
                .checkpoint_inserts(hid)
                .filter(|e| e.at >= tc)
                .any(|e| stamp(e).and_then(|s| w.by_stamp(&s)).is_some_and(|s| s.holder == victim && s.fence == fence));
            asked || committed
        })
        .count() as u64
}

fn stamp(e: &crate::audit::Event) -> Option<String> {
    let s = e.new.as_ref()?.get("state_json")?;
    let v: serde_json::Value = match s {
        serde_json::Value::String(t) => serde_json::from_str(t).ok()?,
        v => v.clone(),
    };
    v.get("stamp")?.as_str().map(String::from)
}

/// Provisions of 2–3 recoverers at once after which the store recovered the handoff.
fn races(cx: &Ctx<'_>) -> u64 {
    let Some(a) = cx.audit else { return 0 };
    cx.ix
        .provisions
        .iter()
        .filter(|p| p.s("mode") == Some("recover") && p.u("racers").is_some_and(|n| n >= 2))
        .filter(|p| {
            let hid = p.hid().unwrap_or("");
            a.transitions().iter().any(|t| t.hid == hid && t.kind == Kind::Recover && t.at >= p.t())
        })
        .count() as u64
}

/// Orphans in the store audit: (of a holder still alive — its lease
/// expired —, of a holder the harness had seen exit).
fn orphans(cx: &Ctx<'_>) -> (u64, u64) {
    let Some(a) = cx.audit else { return (0, 0) };
    let (mut expiry, mut death) = (0, 0);
    for t in a.transitions().iter().filter(|t| t.kind == Kind::Orphan) {
        let Some((holder, _)) = &t.old else { continue };
        match cx.ix.exits.get(holder) {
            Some(exit) if *exit <= t.at => death += 1,
            _ if cx.ix.spawns.contains_key(holder) => expiry += 1,
            _ => {}
        }
    }
    (expiry, death)
}

/// Handoffs the audit shows parked `failed`: by the DLQ (`dlq`), or otherwise (a budget kill).
fn parked(cx: &Ctx<'_>, dlq: bool) -> u64 {
    let Some(a) = cx.audit else { return 0 };
    cx.hids
        .iter()
        .filter(|hid| {
            a.handoff_changes(hid).any(|e| {
                e.new_s("status") == Some("failed")
                    && e.old_s("status") != Some("failed")
                    && e.new
                        .as_ref()
                        .and_then(|n| n.pointer("/execution/error"))
                        .and_then(serde_json::Value::as_str)
                        .is_some_and(|err| err.contains("DLQ"))
                        == dlq
            })
        })
        .count() as u64
}

/// Leader SIGKILLs after which the audit shows the leadership row taken by another supervisor.
fn leaders_replaced(cx: &Ctx<'_>) -> u64 {
    let Some(a) = cx.audit else { return 0 };
    let killed = cx.ix.faults.iter().filter(|f| {
        f.s("signal") == Some("KILL") && f.get("leader").and_then(serde_json::Value::as_bool) == Some(true)
    });
    killed
        .filter(|f: &&&Ev| {
            let victim = f.s("victim").unwrap_or("");
            a.events.iter().any(|e| {
                e.table == "leadership"
                    && e.at >= f.t()
                    && e.old_s("holder") == Some(victim)
                    && e.new_s("holder").is_some_and(|h| h != victim)
            })
        })
        .count() as u64
}

/// Database faults the harness injected (any `db-*` kind).
fn db_faults(cx: &Ctx<'_>) -> u64 {
    let ids: std::collections::BTreeSet<u64> = cx
        .ix
        .faults
        .iter()
        .filter(|f| f.s("kind").is_some_and(|k| k.starts_with("db-")))
        .filter_map(|f| f.u("fault_id"))
        .collect();
    ids.len() as u64
}
