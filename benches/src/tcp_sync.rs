//! `dhp-bench tcp-sync`: where group commit meets the disk. Synchronous
//! shipping rates with the server's fsync on and off (`--no-fsync`) at
//! several numbers of concurrent shippers (one handoff each), each case
//! the median of `reps` interleaved rounds, next to the raw `fdatasync`
//! rate of the same file system measured between the rounds, and what the
//! server's counters say about its syncs (lines per sync, how long a line
//! waits for its sync, how long an ack takes to leave after it).

use crate::measure::{fsync_rate, median};
use crate::tcp_rates::{ship_run, ShipRun};
use dhp_core::transport::net::ShipMode;
use dhp_core::Result;
use serde_json::{json, Value};
use std::path::Path;

/// The figures of one run (`per` guards the divisions).
fn detail(r: &ShipRun, shippers: usize, n: usize) -> Value {
    let s = &r.stats;
    let per = |a: u64, b: u64| if b > 0 { a as f64 / b as f64 } else { 0.0 };
    json!({
        "rtt_us": r.secs / n.max(1) as f64 * 1e6,
        "cpu_us_per_line": r.cpu_secs / (shippers * n).max(1) as f64 * 1e6,
        "syncs": s.journal_syncs,
        "lines_per_sync": per(s.journal_lines_synced, s.journal_syncs),
        "sync_us": per(s.journal_sync_ns, s.journal_syncs) / 1e3,
        "write_to_sync_us": per(s.journal_wait_ns, s.journal_lines_synced) / 1e3,
        "sync_to_ack_us": per(s.durable_ack_ns, s.durable_acks) / 1e3,
    })
}

/// The median of each field over `runs`.
fn medians(runs: &[Value]) -> Value {
    let mut out = json!({});
    if let Some(Value::Object(first)) = runs.first() {
        for k in first.keys() {
            let m = median(runs.iter().map(|r| r[k].as_f64().unwrap_or(0.0)).collect());
            out[k] = json!((m * 10.0).round() / 10.0);
        }
    }
    out
}

/// Rates for each entry of `shippers`: `n` checkpoints per shipper.
pub fn run(dir: &Path, shippers: &[usize], n: usize, reps: usize) -> Result<Value> {
    std::fs::create_dir_all(dir).map_err(|e| crate::fixture::io_err(dir, e))?;
    let mut rows = Vec::new();
    let mut probes = Vec::new();
    for &s in shippers {
        let (mut off, mut on) = (Vec::new(), Vec::new());
        let (mut off_d, mut on_d) = (Vec::new(), Vec::new());
        for _ in 0..reps.max(1) {
            probes.push(fsync_rate(dir, 1, 50)?);
            for fsync in [false, true] {
                eprintln!("dhp-bench tcp-sync: {s} shippers, fsync={fsync}");
                let r = ship_run(&dir.join("rate"), fsync, None, ShipMode::Sync, s, n)?;
                let d = detail(&r, s, n);
                if fsync {
                    on.push(r.rate);
                    on_d.push(d);
                } else {
                    off.push(r.rate);
                    off_d.push(d);
                }
            }
        }
        let (off, on) = (median(off), median(on));
        let (on_d, off_d) = (medians(&on_d), medians(&off_d));
        rows.push(json!({"shippers": s, "no_fsync": off.round(), "fsync": on.round(),
                         "ratio": if off > 0.0 { (on / off * 100.0).round() / 100.0 } else { 0.0 },
                         "lines_per_sync": on_d["lines_per_sync"],
                         "fsync_detail": on_d, "no_fsync_detail": off_d}));
    }
    let probe = median(probes).round();
    let _ = std::fs::remove_dir_all(dir.join("rate"));
    Ok(json!({"rows": rows, "fsync_probe": probe, "checkpoints_per_shipper": n, "reps": reps}))
}

/// The Markdown table of a run.
pub fn markdown(v: &Value) -> String {
    let f = |x: &Value| x.as_f64().unwrap_or(0.0);
    let mut s = format!(
        "Synchronous shipping, checkpoints/s (median of {} rounds, {} checkpoints per shipper, one handoff per \
         shipper, plaintext, {} build); raw `fdatasync` rate of the same file system between the rounds: {:.0}/s. \
         Lines per sync and the µs columns are the server's own counters (fsync runs): a sync's duration, a line's \
         wait from its journal write to the start of the sync covering it, and from that sync's end to its ack \
         written; round trip = one shipper's time per checkpoint; CPU = the process's user+system time per line.\n\n\
         | shippers | --no-fsync | fsync | fsync / --no-fsync | lines per sync | sync µs | write→sync µs | \
         sync→ack µs | round trip µs (off → on) | CPU µs/line (off → on) |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        v["reps"],
        v["checkpoints_per_shipper"],
        if cfg!(debug_assertions) { "debug" } else { "release" },
        f(&v["fsync_probe"])
    );
    for r in v["rows"].as_array().into_iter().flatten() {
        let (on, off) = (&r["fsync_detail"], &r["no_fsync_detail"]);
        s.push_str(&format!(
            "| {} | {:.0} | {:.0} | {:.2} | {:.1} | {:.0} | {:.0} | {:.0} | {:.0} → {:.0} | {:.0} → {:.0} |\n",
            r["shippers"],
            f(&r["no_fsync"]),
            f(&r["fsync"]),
            f(&r["ratio"]),
            f(&r["lines_per_sync"]),
            f(&on["sync_us"]),
            f(&on["write_to_sync_us"]),
            f(&on["sync_to_ack_us"]),
            f(&off["rtt_us"]),
            f(&on["rtt_us"]),
            f(&off["cpu_us_per_line"]),
            f(&on["cpu_us_per_line"]),
        ));
    }
    s
}
