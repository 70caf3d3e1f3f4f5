//! no-torn-after-store-full: rounds whose SQLite store's disk was filled
//! (`store-full`) must end with a store that opens and passes SQLite's
//! `PRAGMA integrity_check`, whose every checkpoint row's `state_hash` is
//! `sha256(state_json)` of a JSON object, and that holds every checkpoint
//! and completion a process was told committed (a commit SQLite refused
//! with `SQLITE_FULL` must never have been acknowledged). A full disk is
//! an error, not a crash: no process may die of a panic (exit 101) or of a
//! signal it was not sent (only the harness's SIGKILL and the teardown's
//! SIGTERM are expected), and a builtin worker whose operation failed
//! because the disk was full exits with `StoreError`'s code, 11
//! (docs/cli.md). Rounds without a `store-full` fault check nothing.

use crate::check::ctx::Ctx;
use crate::check::findings::Findings;
use crate::check::{opt, short};
use rusqlite::{Connection, OpenFlags};
use std::collections::BTreeMap;

/// `dhp`'s exit code for `StoreError` (docs/cli.md).
const STORE_ERROR_EXIT: i64 = 11;
/// Rust's exit code after a panic.
const PANIC_EXIT: i64 = 101;
/// Signals a process of a round may die of: the harness's (and
/// failpoints', and the supervisors' watchdog's) SIGKILL, teardown's SIGTERM.
const EXPECTED_SIGNALS: [i64; 2] = [9, 15];

/// An operation failed because the store's disk was full (SQLite's
/// `SQLITE_FULL`, or the OS's `ENOSPC` on a file next to the store).
fn disk_error(e: &str) -> bool {
    e.contains("disk is full") || e.contains("No space left on device")
}

pub(super) fn check(cx: &Ctx<'_>) -> Findings {
    let mut out = Findings::default();
    let fills = cx.ix.faults.iter().filter(|f| f.s("kind") == Some("store-full")).count();
    if fills == 0 || cx.cfg.engine != "sqlite" {
        return out;
    }
    integrity(cx, &mut out);
    rows_and_acks(cx, &mut out);
    exits(cx, &mut out);
    let failed = cx.ix.ops.iter().filter(|o| o.error.as_deref().is_some_and(disk_error)).count();
    out.note(format!(
        "{fills} store-full fault(s); {failed} operation(s) failed with a full-disk error (SQLITE_FULL or ENOSPC)"
    ));
    if let Some(n) = wal_growth(cx) {
        out.note(n);
    }
    out.note(handed_on(cx));
    out
}

/// What became of the handoffs whose worker a full disk ended while it
/// held the lease: orphaned (how soon after the exit), so a standby could
/// recover them. `outcome` requires that they end; this says how.
fn handed_on(cx: &Ctx<'_>) -> String {
    let (mut ended, mut delays) = (0u64, Vec::new());
    for e in cx.ix.exit_events.iter().filter(|e| e.i("code") == Some(STORE_ERROR_EXIT)) {
        let Some(name) = e.s("name") else { continue };
        let mine = |o: &&crate::check::history::Op| o.process == name;
        let full = cx.ix.ops.iter().filter(mine).rfind(|o| o.ok == Some(false)).and_then(|o| o.error.as_deref());
        let held =
            cx.ix.ops.iter().filter(mine).rfind(|o| o.ok == Some(true) && (o.op == "claim" || o.op == "recover"));
        let (Some(true), Some(g)) = (full.map(disk_error), held) else { continue };
        ended += 1;
        let orphan = cx.ix.orphans.iter().find(|o| {
            o.hid == g.hid && o.previous_holder.as_deref() == Some(g.holder.as_str()) && o.previous_fence == g.fence
        });
        if let Some(o) = orphan {
            delays.push(o.t - e.t());
        }
    }
    delays.sort_by(f64::total_cmp);
    let ms = |q: f64| delays.get(((delays.len() as f64 - 1.0) * q).round() as usize).map_or(0.0, |d| d * 1000.0);
    format!(
        "{ended} worker(s) holding a lease exited 11 for the full disk; {} of their handoffs were orphaned afterwards (exit → orphan p50 {:.0} ms, max {:.0} ms; a negative time: the lease ran out first)",
        delays.len(),
        ms(0.5),
        ms(1.0)
    )
}

/// How the WAL and the database file changed while the disk was full
/// (the harness measured both at each fill and each heal).
fn wal_growth(cx: &Ctx<'_>) -> Option<String> {
    // fault id → (time, database bytes, WAL bytes)
    let at = |what: &str| -> BTreeMap<u64, (f64, u64, u64)> {
        cx.ix
            .observes
            .iter()
            .filter(|o| o.s("what") == Some(what))
            .filter_map(|o| Some((o.u("fault_id")?, (o.t(), o.u("db_bytes")?, o.u("wal_bytes")?))))
            .collect()
    };
    let (fills, heals) = (at("store-full"), at("store-heal"));
    let pairs: Vec<_> = fills.iter().filter_map(|(id, f)| heals.get(id).map(|h| (*f, *h))).collect();
    if pairs.is_empty() {
        return None;
    }
    let grew = pairs.iter().filter(|(f, h)| h.2 > f.2).count();
    let max_wal = pairs.iter().map(|(f, h)| f.2.max(h.2)).max().unwrap_or(0);
    let db_grew = pairs.iter().filter(|(f, h)| h.1 > f.1).count();
    // commits that went through on a full disk: they fit in pages the WAL already had
    let committed_full = cx
        .ix
        .ops
        .iter()
        .filter(|o| o.ok == Some(true) && o.op == "checkpoint")
        .filter(|o| o.out_t.is_some_and(|t| pairs.iter().any(|(f, h)| f.0 <= o.invoke_t && t <= h.0)))
        .count();
    Some(format!(
        "while the disk was full: {committed_full} checkpoint(s) still committed (into WAL pages already allocated); the WAL grew in {grew} of {} fill(s) (largest {max_wal} bytes), the database file in {db_grew}",
        pairs.len()
    ))
}

/// The store file opens and SQLite finds it intact.
fn integrity(cx: &Ctx<'_>, out: &mut Findings) {
    out.checked += 1;
    let db = cx.paths.store.join("dhp.sqlite3");
    let result = Connection::open_with_flags(&db, OpenFlags::SQLITE_OPEN_READ_ONLY).and_then(|c| {
        let mut st = c.prepare("PRAGMA integrity_check")?;
        let rows = st.query_map([], |r| r.get::<_, String>(0))?.collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    });
    match result {
        Ok(rows) if rows == ["ok"] => {}
        Ok(rows) => {
            out.plain(format!("the store fails PRAGMA integrity_check after its disk filled: {}", rows.join("; ")))
        }
        Err(e) => out.plain(format!("the store {} does not open after its disk filled: {e}", db.display())),
    }
}

/// Every row is whole; every acknowledgement is in the store.
fn rows_and_acks(cx: &Ctx<'_>, out: &mut Findings) {
    let t0 = cx.meta["t0"].as_f64().unwrap_or(0.0);
    for (hid, f) in cx.hids.iter().filter_map(|hid| cx.facts.get(hid).map(|f| (hid, f))) {
        for c in &f.h.ckpts {
            out.checked += 1;
            if dhp_oracle::sha256_hex(c.state_json.as_bytes()) != c.state_hash || !c.state.is_object() {
                out.of(
                    hid,
                    format!(
                        "{}: checkpoint seq {} is torn: its state_json does not match its state_hash",
                        short(hid),
                        c.seq
                    ),
                );
            }
        }
        for o in f.ops.iter().filter(|o| o.ok == Some(true)) {
            let at = o.out_t.unwrap_or(o.invoke_t) - t0;
            match o.op.as_str() {
                "checkpoint" => {
                    out.checked += 1;
                    let kept = f.h.holds_checkpoint(o.seq, o.next_n);
                    if !kept {
                        out.of(hid, format!(
                            "{}: {} was told checkpoint seq {} (next_n {}) committed at +{at:.3}s; the store does not have it",
                            short(hid), o.holder, opt(o.seq), opt(o.next_n)
                        ));
                    }
                }
                "complete" => {
                    out.checked += 1;
                    if f.h.status != "completed" {
                        out.of(
                            hid,
                            format!(
                                "{}: {} was told its completion committed at +{at:.3}s; the handoff is {} in the store",
                                short(hid),
                                o.holder,
                                f.h.status
                            ),
                        );
                    }
                }
                _ => {}
            }
        }
    }
}

/// No panic, no unexpected signal; a full disk ends a builtin worker with
/// `StoreError`'s exit code. Notes the exit codes seen.
fn exits(cx: &Ctx<'_>, out: &mut Findings) {
    let mut codes: BTreeMap<String, u64> = BTreeMap::new();
    for e in &cx.ix.exit_events {
        let Some(name) = e.s("name") else { continue };
        out.checked += 1;
        let (code, signal) = (e.i("code"), e.i("signal"));
        *codes.entry(signal.map_or_else(|| format!("exit {}", opt(code)), |s| format!("signal {s}"))).or_default() += 1;
        if code == Some(PANIC_EXIT) {
            out.plain(format!("{name} panicked (exit {PANIC_EXIT}) in a round whose store's disk filled"));
        }
        if let Some(s) = signal.filter(|s| !EXPECTED_SIGNALS.contains(s)) {
            out.plain(format!("{name} died of signal {s}, which nobody sent it, in a round whose store's disk filled"));
        }
        let builtin_worker = cx.ix.spawns.get(name).is_some_and(|s| s.imp == "builtin" && s.role == "worker");
        let last_failure = cx.ix.ops.iter().rfind(|o| o.process == name && o.ok == Some(false));
        let full = last_failure.and_then(|o| o.error.as_deref()).is_some_and(disk_error);
        if builtin_worker && full && code.is_some_and(|c| c != STORE_ERROR_EXIT) {
            out.plain(format!(
                "{name}'s last operation failed because the store's disk was full, and it exited {} (StoreError is {STORE_ERROR_EXIT})",
                opt(code)
            ));
        }
    }
    let seen: Vec<String> = codes.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
    out.note(format!("exits in the round: {}", seen.join(", ")));
}
