//! `dhp-bench tcp-sync`: where group commit meets the disk. Synchronous
//! shipping rates with the server's fsync on and off (`--no-fsync`) at
//! several numbers of concurrent shippers (one handoff each), each case
//! the median of `reps` interleaved rounds, next to the raw `fdatasync`
//! rate of the same file system measured between the rounds.

use crate::measure::{fsync_rate, median};
use crate::tcp_rates::ship_rate;
use dhp_core::transport::net::ShipMode;
use dhp_core::Result;
use serde_json::{json, Value};
use std::path::Path;

/// Rates for each entry of `shippers`: `n` checkpoints per shipper.
pub fn run(dir: &Path, shippers: &[usize], n: usize, reps: usize) -> Result<Value> {
    std::fs::create_dir_all(dir).map_err(|e| crate::fixture::io_err(dir, e))?;
    let mut rows = Vec::new();
    let mut probes = Vec::new();
    for &s in shippers {
        let (mut off, mut on) = (Vec::new(), Vec::new());
        for _ in 0..reps.max(1) {
            probes.push(fsync_rate(dir, 1, 50)?);
            for fsync in [false, true] {
                eprintln!("dhp-bench tcp-sync: {s} shippers, fsync={fsync}");
                let r = ship_rate(&dir.join("rate"), fsync, None, ShipMode::Sync, s, n)?;
                if fsync {
                    on.push(r)
                } else {
                    off.push(r)
                }
            }
        }
        let (off, on) = (median(off), median(on));
        rows.push(json!({"shippers": s, "no_fsync": off.round(), "fsync": on.round(),
                         "ratio": if off > 0.0 { (on / off * 100.0).round() / 100.0 } else { 0.0 },
                         "lines_per_sync": (on / median(probes.clone()) * 10.0).round() / 10.0}));
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
         shipper, plaintext, {} build); raw `fdatasync` rate of the same file system between the rounds: {:.0}/s.\n\n\
         | shippers | --no-fsync | fsync | fsync / --no-fsync | fsync rate / raw fdatasync rate |\n|---:|---:|---:|---:|---:|\n",
        v["reps"],
        v["checkpoints_per_shipper"],
        if cfg!(debug_assertions) { "debug" } else { "release" },
        f(&v["fsync_probe"])
    );
    for r in v["rows"].as_array().into_iter().flatten() {
        s.push_str(&format!(
            "| {} | {:.0} | {:.0} | {:.2} | {:.1} |\n",
            r["shippers"],
            f(&r["no_fsync"]),
            f(&r["fsync"]),
            f(&r["ratio"]),
            f(&r["lines_per_sync"])
        ));
    }
    s
}
