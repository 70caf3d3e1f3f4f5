//! Issue 21's measurements (docs/scale.md): supervisor scan and liveness
//! poll at 1k/10k/100k running handoffs, an idle supervisor's CPU, the
//! reference's scan on the same stores, a 1,000,000-handoff store's
//! operations, 1/8/32 writer processes, and kill -9 → orphaned with 100k
//! running handoffs.
//!
//! Stores are filled by bulk inserts in large transactions (rows exactly
//! as claim and complete write them), never one dispatch per transaction.
//! Each figure is a short run; the load average is recorded beside it.

use crate::fixture::{bench_config, fresh_root, sdk_envelope};
use crate::measure::{loadavg, median};
use dhp_core::store::SqliteStore;
use dhp_core::{envelope, json, liveness, Error, Result, Runner, Supervisor};
use rusqlite::{params, Connection};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Holders of the running handoffs in the fixtures (one per worker process).
pub const HOLDERS: usize = 16;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn time_ms(reps: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let mut xs = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        f()?;
        xs.push(ms(t.elapsed()));
    }
    Ok(median(xs))
}

/// How long before the fill its running rows say they were written: a
/// scan right after the fill then measures a store in which nothing
/// changed lately, not the tail of the fill's own change window (the
/// supervisor re-reads the last 5 s of writes; docs/scale.md).
const WRITTEN_AGO_S: f64 = 60.0;

/// Append `running` running handoffs (live 3 h leases, recent progress,
/// budgets within limits, held by [`HOLDERS`] holders) and `completed`
/// completed ones (no ownership row, a progress row) to the store at
/// `root`, numbering envelopes from `first`. One transaction per 50,000
/// rows.
pub fn fill(root: &Path, first: u64, running: usize, completed: usize) -> Result<()> {
    drop(SqliteStore::open(root)?);
    let mut c = Connection::open(root.join("dhp.sqlite3"))?;
    c.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;")?;
    let t = envelope::now();
    let total = running + completed;
    let mut i = 0usize;
    while i < total {
        let tx = c.transaction()?;
        {
            let mut ins_h = tx.prepare("INSERT INTO handoffs (hid, envelope_json, updated_at) VALUES (?1, ?2, ?3)")?;
            let mut ins_o = tx.prepare(
                "INSERT INTO ownership (hid, holder, fence, lease_expires_at, heartbeat_interval_s, max_missed, \
                 updated_at) VALUES (?1, ?2, 0, ?3, 1200.0, 3, ?4)",
            )?;
            let mut ins_p = tx.prepare(
                "INSERT INTO progress (hid, last_checkpoint_at, last_digest, digest_repeat_count, updated_at) \
                 VALUES (?1, ?2, NULL, 0, ?3)",
            )?;
            for _ in 0..50_000.min(total - i) {
                let mut env = sdk_envelope(first + i as u64)?;
                let hid = env["handoff_id"].as_str().unwrap_or_default().to_string();
                let holder = format!("w-{}", i % HOLDERS);
                let ex = env["execution"]
                    .as_object_mut()
                    .ok_or_else(|| Error::validation("built envelope has no execution"))?;
                ex.insert("claimed_at".into(), json::float(t));
                ex.insert("fence".into(), json!(0));
                ex.insert("steps".into(), json!(0));
                ex.insert("spend_usd".into(), json::float(0.0));
                ex.insert("attempt".into(), json!(1));
                if i < running {
                    ex.insert("status".into(), json!("running"));
                    ex.insert("runner_id".into(), json!(holder));
                    ins_h.execute(params![hid, json::dumps(&env)?, t - WRITTEN_AGO_S])?;
                    ins_o.execute(params![hid, holder, t + 3.0 * 3600.0, t - WRITTEN_AGO_S])?;
                    ins_p.execute(params![hid, t + 3.0 * 3600.0, t - WRITTEN_AGO_S])?;
                } else {
                    ex.insert("status".into(), json!("completed"));
                    ex.insert("completed_at".into(), json::float(t));
                    ex.insert("result".into(), json!({"ok": true}));
                    ins_h.execute(params![hid, json::dumps(&env)?, t - 7200.0])?;
                    ins_p.execute(params![hid, t - 7200.0, t - 7200.0])?;
                }
                i += 1;
            }
        }
        tx.commit()?;
    }
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    Ok(())
}

/// Tokens for the fixture's holders, held by this process for as long as
/// the returned value lives: the liveness poll tests them as it would the
/// tokens of [`HOLDERS`] live worker processes.
pub fn hold_tokens(root: &Path) -> Result<Vec<liveness::Token>> {
    (0..HOLDERS).map(|i| liveness::publish(root, &dhp_core::WorkerId::parse(&format!("w-{i}"))?)).collect()
}

/// CPU used by process `pid` so far, in seconds (utime + stime).
pub(crate) fn cpu_s(pid: u32) -> Option<f64> {
    stat_ticks(pid, 11..=12)
}

/// CPU used by process `pid` and its children that it has waited for, in
/// seconds (utime + stime + cutime + cstime): a PostgreSQL postmaster's
/// share includes every backend that has exited.
pub(crate) fn cpu_with_children_s(pid: u32) -> Option<f64> {
    stat_ticks(pid, 11..=14)
}

/// CPU used by the children of process `pid` that it has waited for, in
/// seconds (cutime + cstime).
pub(crate) fn children_cpu_s(pid: u32) -> Option<f64> {
    stat_ticks(pid, 13..=14)
}

/// The parent of process `pid`.
pub(crate) fn parent_pid(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

/// Sum of the `/proc/PID/stat` fields `fields` (counted after the command
/// name, from 0), in seconds.
fn stat_ticks(pid: u32, fields: std::ops::RangeInclusive<usize>) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let mut ticks = 0.0;
    for i in fields {
        ticks += f.get(i)?.parse::<f64>().ok()?;
    }
    Some(ticks / 100.0) // USER_HZ is 100 on Linux
}

/// Share of one core a `dhp supervisor` process (default configuration:
/// a scan every second, a consistency pass every lease TTL, 6 s) uses on
/// the store at `root` with nothing to do, measured over `window` after a
/// warm-up: at least `warmup`, and until a second in which it used less
/// than half a core (its first, full scan is over; at most 120 s).
pub fn idle_supervisor_cpu(dhp: &Path, root: &Path, warmup: Duration, window: Duration) -> Result<f64> {
    let total = (warmup + window).as_secs() + 150;
    let mut child = Command::new(dhp)
        .arg("supervisor")
        .arg(root)
        .args(["idle-sup", &total.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| Error::Io { path: dhp.to_path_buf(), source: e })?;
    std::thread::sleep(warmup);
    let started = Instant::now();
    let mut prev = cpu_s(child.id());
    while started.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_secs(1));
        let now = cpu_s(child.id());
        match (prev, now) {
            (Some(a), Some(b)) if b - a < 0.5 => break,
            _ => prev = now,
        }
    }
    let a = cpu_s(child.id());
    let t = Instant::now();
    std::thread::sleep(window);
    let b = cpu_s(child.id());
    let el = t.elapsed().as_secs_f64();
    let _ = child.kill();
    let _ = child.wait();
    match (a, b) {
        (Some(a), Some(b)) => Ok((b - a) / el * 100.0),
        _ => Err(Error::validation("the supervisor exited during the CPU measurement")),
    }
}

/// An idle `dhp supervisor`'s share of a core on one store of `running`
/// running handoffs (held by [`HOLDERS`] live tokens), for each binary of
/// `dhps` in turn — e.g. two builds, compared on the same store — `rounds`
/// times, each over `window` after [`idle_supervisor_cpu`]'s warm-up. The
/// load average is recorded beside each figure.
pub fn idle_rows(
    dir: &Path,
    dhps: &[std::path::PathBuf],
    running: usize,
    rounds: usize,
    window: Duration,
) -> Result<Value> {
    let root = fresh_root(dir, &format!("scale-idle-{running}"));
    fill(&root, 10_000_000, running, 0)?;
    let tokens = hold_tokens(&root)?;
    let mut rows = Vec::new();
    for round in 0..rounds.max(1) {
        for dhp in dhps {
            let load = loadavg();
            let pct = idle_supervisor_cpu(dhp, &root, Duration::from_secs(3), window)?;
            rows.push(json!({"round": round, "dhp": dhp.display().to_string(), "idle_cpu_pct": pct,
                             "window_s": window.as_secs_f64(), "load": load, "load_after": loadavg()}));
        }
    }
    drop(tokens);
    let _ = std::fs::remove_dir_all(&root);
    Ok(json!({"running": running, "rows": rows}))
}

/// The reference's Supervisor3 on the store at `root`: its scan and its
/// expired-lease query (its only death detection), median ms of `reps`.
pub fn reference_scan(py: &Path, root: &Path, reps: usize) -> Result<Value> {
    let code = r#"
import sys, time, json
from dhp.supervisor3 import Supervisor3
root, reps = sys.argv[1], int(sys.argv[2])
s = Supervisor3(root, supervisor_id="py-bench")
s.store.cx.execute("UPDATE leadership SET expires_at=0")
def med(f):
    xs = []
    for _ in range(reps):
        t = time.perf_counter(); f(); xs.append((time.perf_counter() - t) * 1e3)
    xs.sort(); return xs[len(xs) // 2]
scan = med(s.scan)
exp = med(s.store.expired_leases)
s.store.cx.execute("UPDATE leadership SET expires_at=0")
print(json.dumps({"scan_ms": scan, "expired_leases_ms": exp, "leader": s.is_leader}))
"#;
    let out = Command::new(py)
        .args(["-c", code])
        .arg(root)
        .arg(reps.to_string())
        .output()
        .map_err(|e| Error::Io { path: py.to_path_buf(), source: e })?;
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).map_err(|_| {
        Error::validation(format!("reference scan failed: {text} {}", String::from_utf8_lossy(&out.stderr)))
    })
}

/// Scan and liveness poll on a store with `n` running handoffs.
pub fn scan_row(dir: &Path, dhp: &Path, py: Option<&Path>, n: usize, reps: usize) -> Result<Value> {
    let root = fresh_root(dir, &format!("scale-{n}"));
    let t = Instant::now();
    fill(&root, 10_000_000, n, 0)?;
    let fill_s = t.elapsed().as_secs_f64();
    let tokens = hold_tokens(&root)?;
    let sup = Supervisor::open(&root, "bench-sup", bench_config())?;
    let t = Instant::now();
    let first = sup.scan()?;
    let first_ms = ms(t.elapsed());
    if !first.is_empty() {
        return Err(Error::validation(format!("scan found work on an idle store: {first:?}")));
    }
    let load = loadavg();
    // Passes a quarter second apart, so that the leader renews its term
    // every ten or so as it does at the default cadence: the median is a
    // pass that only reads, the mean includes the renewals' commits.
    let mut xs = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        std::thread::sleep(Duration::from_millis(250));
        let t = Instant::now();
        sup.scan()?;
        xs.push(ms(t.elapsed()));
    }
    let scan_mean_ms = xs.iter().sum::<f64>() / xs.len() as f64;
    let scan_max_ms = xs.iter().copied().fold(0.0, f64::max);
    let scan_ms = median(xs);
    let poll_ms = time_ms(reps * 10, || sup.dead_workers().map(drop))?;
    // Hand leadership over now: otherwise the measured supervisor waits out
    // this one's term (this process is alive, so its token holds) and its
    // takeover's full pass lands inside the CPU window.
    sup.resign()?;
    drop(sup);
    let cpu = idle_supervisor_cpu(dhp, &root, Duration::from_secs(3), Duration::from_secs(12))?;
    let reference = match py {
        Some(py) => reference_scan(py, &root, if n >= 100_000 { 1 } else { 3 })?,
        None => Value::Null,
    };
    drop(tokens);
    let _ = std::fs::remove_dir_all(&root);
    Ok(json!({"running": n, "fill_s": fill_s, "first_scan_ms": first_ms, "scan_ms": scan_ms,
              "scan_mean_ms": scan_mean_ms, "scan_max_ms": scan_max_ms, "poll_ms": poll_ms,
              "idle_cpu_pct": cpu, "reference": reference, "load": load}))
}

/// Operations on a store of `total` handoffs of which `running` run.
pub fn big_row(dir: &Path, dhp: &Path, total: usize, running: usize, reps: usize) -> Result<Value> {
    let root = fresh_root(dir, "scale-big");
    let t = Instant::now();
    fill(&root, 20_000_000, running, total - running)?;
    let fill_s = t.elapsed().as_secs_f64();
    let size_mb = std::fs::metadata(root.join("dhp.sqlite3")).map(|m| m.len() as f64 / 1e6).unwrap_or(f64::NAN);
    let _tokens = hold_tokens(&root)?;
    let load = loadavg();
    let r = Runner::open(&root, "big-w", bench_config())?;
    let some = Runner::open(&root, "probe", bench_config())?.all_hids_page(reps)?;
    let mut k = 0;
    let status_ms = time_ms(reps, || {
        k = (k + 1) % some.len().max(1);
        r.status(&some[k]).map(drop)
    })?;
    let mut fresh = Vec::new();
    let mut i = 0u64;
    let dispatch_ms = time_ms(reps, || {
        i += 1;
        fresh.push(r.dispatch(&sdk_envelope(30_000_000 + i)?)?);
        Ok(())
    })?;
    let mut j = 0;
    let claim_ms = time_ms(reps, || {
        j += 1;
        r.claim(&fresh[j - 1]).map(drop)
    })?;
    let sup = Supervisor::open(&root, "bench-sup", bench_config())?;
    let t = Instant::now();
    sup.scan()?;
    let first_scan_ms = ms(t.elapsed());
    let scan_ms = time_ms(reps, || sup.scan().map(drop))?;
    let t = Instant::now();
    let out = Command::new(dhp)
        .arg("status")
        .arg(&root)
        .args(["--limit", "100", "--json"])
        .output()
        .map_err(|e| Error::Io { path: dhp.to_path_buf(), source: e })?;
    let page_ms = ms(t.elapsed());
    if !out.status.success() {
        return Err(Error::validation(format!("dhp status failed: {}", String::from_utf8_lossy(&out.stderr))));
    }
    drop(sup);
    let _ = std::fs::remove_dir_all(&root);
    Ok(json!({"total": total, "running": running, "fill_s": fill_s, "db_mb": size_mb, "status_ms": status_ms,
              "dispatch_ms": dispatch_ms, "claim_ms": claim_ms, "first_scan_ms": first_scan_ms, "scan_ms": scan_ms,
              "status_page_ms": page_ms, "load": load}))
}

/// Helper: the first `n` hids, through the paged listing.
trait FirstHids {
    fn all_hids_page(&self, n: usize) -> Result<Vec<String>>;
}

impl FirstHids for Runner {
    fn all_hids_page(&self, n: usize) -> Result<Vec<String>> {
        dhp_core::store::with_tx(self.store().as_ref(), dhp_core::store::Mode::Read, |tx| tx.hids_page(None, n))
    }
}

/// kill -9 → orphaned on a store that already holds `running` running
/// handoffs (see [`crate::pg::kill_to_orphaned`], here on a directory).
pub fn kill_row(dir: &Path, dhp: &Path, running: usize, kills: usize) -> Result<Value> {
    let root = fresh_root(dir, "scale-kill");
    fill(&root, 40_000_000, running, 0)?;
    let _tokens = hold_tokens(&root)?;
    let load = loadavg();
    let root_s = root.to_string_lossy().into_owned();
    let mut v = crate::pg::kill_to_orphaned(dhp, &root_s, kills)?;
    v["running"] = json!(running);
    v["load"] = json!(load);
    let _ = std::fs::remove_dir_all(&root);
    Ok(v)
}

/// Aggregate checkpoints/s of 1, 8, 32 … `bench cp-worker` processes on
/// one store (`bench` may be another build's dhp-bench: a "before" run).
pub fn writers_row(dir: &Path, bench: &Path, procs: &[usize], seconds: f64) -> Result<Value> {
    let mut rows = Vec::new();
    for &p in procs {
        let root = fresh_root(dir, &format!("scale-writers-{p}"));
        drop(SqliteStore::open(&root)?);
        let load = loadavg();
        let rate = crate::pg::aggregate(bench, &root.to_string_lossy(), p, seconds)?;
        rows.push(json!({"procs": p, "rate": rate, "load": load}));
        let _ = std::fs::remove_dir_all(&root);
    }
    Ok(json!(rows))
}

/// The section of benches/RESULTS.md for these figures.
pub fn markdown(v: &Value) -> String {
    let f = |x: &Value, d: usize| x.as_f64().map_or("–".to_string(), |x| format!("{x:.d$}"));
    let mut md = String::from("\n## Scale (issue 21): 100k running handoffs, 1M stores, 32 writers\n\n");
    md.push_str(
        "`dhp-bench scale` (release build; docs/scale.md explains the design). Load average beside each row.\n\n",
    );
    md.push_str("| running handoffs | scan, nothing to do: median / mean / max (ms) | first (full) scan (ms) | liveness poll (ms) | idle supervisor (% of a core) | reference scan (ms) | reference expired-lease query (ms) | load |\n|---|---|---|---|---|---|---|---|\n");
    for r in v["scan"].as_array().into_iter().flatten() {
        md.push_str(&format!(
            "| {} | {} / {} / {} | {} | {} | {} | {} | {} | {} |\n",
            r["running"],
            f(&r["scan_ms"], 2),
            f(&r["scan_mean_ms"], 2),
            f(&r["scan_max_ms"], 1),
            f(&r["first_scan_ms"], 0),
            f(&r["poll_ms"], 3),
            f(&r["idle_cpu_pct"], 1),
            f(&r["reference"]["scan_ms"], 0),
            f(&r["reference"]["expired_leases_ms"], 1),
            f(&r["load"], 1)
        ));
    }
    if let Some(b) = v.get("big").filter(|b| !b.is_null()) {
        md.push_str(&format!(
            "\nA store of {} handoffs ({} running, the rest completed; {} MB): status of one handoff {} ms, dispatch {} ms, claim {} ms, scan with nothing to do {} ms (first, full scan {} ms), `dhp status ROOT --limit 100` {} ms (process included); load {}.\n",
            b["total"], b["running"], f(&b["db_mb"], 0), f(&b["status_ms"], 2), f(&b["dispatch_ms"], 2),
            f(&b["claim_ms"], 2), f(&b["scan_ms"], 2), f(&b["first_scan_ms"], 0), f(&b["status_page_ms"], 0),
            f(&b["load"], 1)
        ));
    }
    let writers = |key: &str, label: &str, md: &mut String| {
        if let Some(rows) = v[key].as_array() {
            let cells: Vec<String> = rows
                .iter()
                .map(|r| {
                    format!("{} procs: {} checkpoints/s (load {})", r["procs"], f(&r["rate"], 0), f(&r["load"], 1))
                })
                .collect();
            md.push_str(&format!("\n{label}: {}.\n", cells.join("; ")));
        }
    };
    writers("writers", "Writer processes on one store, aggregate (after)", &mut md);
    md.push_str(&writers_verdict(&v["writers"]));
    writers("writers_before", "The same with main's build (before)", &mut md);
    for (key, label) in [("kill", "after"), ("kill_before", "before, main's build")] {
        if let Some(k) = v.get(key).filter(|k| !k.is_null()) {
            md.push_str(&format!(
                "\nkill -9 → orphaned with {} running handoffs ({label}): median {} ms, p99 {} ms, max {} ms over {} kills, {} false orphans; load {}.\n",
                k["running"], f(&k["median_ms"], 1), f(&k["p99_ms"], 1), f(&k["max_ms"], 1), k["kills"],
                k["false_orphans"], f(&k["load"], 1)
            ));
        }
    }
    md
}

/// The target of issue 21, kept by issue 37: the most writer processes
/// measured make at least 0.7 × one writer's checkpoints/s.
pub fn writers_verdict(rows: &Value) -> String {
    let rows = rows.as_array().map(Vec::as_slice).unwrap_or(&[]);
    let rate = |r: &Value| r["rate"].as_f64().unwrap_or(0.0);
    let (Some(one), Some(most)) =
        (rows.iter().find(|r| r["procs"] == 1), rows.iter().max_by_key(|r| r["procs"].as_u64()))
    else {
        return String::new();
    };
    if most["procs"] == 1 {
        return String::new();
    }
    let ratio = if rate(one) > 0.0 { rate(most) / rate(one) } else { 0.0 };
    format!(
        "\n| target | wanted | measured | verdict |\n|---|---|---|---|\n\
         | SQLite, {} writer processes vs one | ≥ 0.7 × one writer's checkpoints/s | {:.0} / {:.0} = {ratio:.2}× | {} |\n",
        most["procs"],
        rate(most),
        rate(one),
        crate::pg_limit::verdict(ratio, 0.7)
    )
}
