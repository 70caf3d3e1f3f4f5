//! The limit synchronous shipping with fsync is judged against (issue 37):
//! what the journal's disk and the no-fsync round trip allow, measured in
//! the same run.
//!
//! A line cannot be acknowledged before a journal sync that started after
//! it was written has ended. So a synchronous shipper's round trip with
//! fsync is at least its round trip without (`RTT_off`, measured) plus one
//! sync (`t_sync`), and N shippers make at most
//!
//! ```text
//! bound(N) = N / (RTT_off(N) + t_sync),   RTT_off(N) = N / rate_off(N)
//! ```
//!
//! `t_sync` is measured by the benchmark itself the way the journal syncs:
//! a record of the journal's size (`<hid> <check> <line>\n`) written in
//! place into a preallocated file, then `fdatasync`, in a loop on the same
//! file system. `pg_test_fsync` (from the PostgreSQL server package, when
//! installed) is run beside it as a cross-check.

use crate::fixture::io_err;
use crate::measure::median;
use crate::tcp_rates::ship_run;
use dhp_core::envelope::utcnow_iso;
use dhp_core::transport::log;
use dhp_core::transport::net::ShipMode;
use dhp_core::{json, Result};
use serde_json::{json as j, Value};
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::time::Instant;

/// Bytes of one journal record for the lines the shipping rows ship: the
/// 64-hex handoff id, a space, the 8-hex check, a space, the line, `\n`.
pub fn record_len() -> Result<usize> {
    let seq = 200;
    let st = crate::fixture::small_state(seq as u64);
    let (_, hash) = json::state_text_and_hash(&st)?;
    let line = log::checkpoint_line(seq, &st, &hash, &utcnow_iso())?;
    Ok(64 + 1 + 8 + 1 + line.len() + 1)
}

/// Microseconds per `write` + `fdatasync` of a `record`-byte record,
/// overwritten in place in a preallocated (written and synced) file in
/// `dir`, as the journal does; the median of `rounds` rounds of `n`.
pub fn journal_sync_us(dir: &Path, record: usize, n: usize, rounds: usize) -> Result<f64> {
    let path = dir.join(format!("journal-probe-{}", std::process::id()));
    let size = (record * n.max(1) + 4096) as u64;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| io_err(&path, e))?;
    let result = (|| {
        f.write_all(&vec![0u8; size as usize]).map_err(|e| io_err(&path, e))?;
        f.sync_all().map_err(|e| io_err(&path, e))?;
        let mut rec = vec![b'x'; record.max(1)];
        if let Some(last) = rec.last_mut() {
            *last = b'\n';
        }
        let mut per = Vec::new();
        for _ in 0..rounds.max(1) {
            f.seek(SeekFrom::Start(0)).map_err(|e| io_err(&path, e))?;
            let t = Instant::now();
            for _ in 0..n.max(1) {
                f.write_all(&rec).map_err(|e| io_err(&path, e))?;
                f.sync_data().map_err(|e| io_err(&path, e))?;
            }
            per.push(t.elapsed().as_secs_f64() * 1e6 / n.max(1) as f64);
        }
        Ok(median(per))
    })();
    let _ = std::fs::remove_file(&path);
    result
}

/// `pg_test_fsync`'s fdatasync µs per operation (one 8 kB write per
/// sync) on a file in `dir`, when the binary is installed.
pub fn pg_test_fsync_us(dir: &Path) -> Option<f64> {
    let bin = crate::pg_limit::pgbench_path().with_file_name("pg_test_fsync");
    let file = dir.join("pg_test_fsync.probe");
    let out = std::process::Command::new(bin).args(["-s", "1", "-f"]).arg(&file).output().ok()?;
    let _ = std::fs::remove_file(&file);
    parse_pg_test_fsync(&String::from_utf8_lossy(&out.stdout))
}

/// The first `fdatasync … usecs/op` figure of `pg_test_fsync`'s output.
pub fn parse_pg_test_fsync(text: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.trim_start().starts_with("fdatasync"))?;
    let w: Vec<&str> = line.split_whitespace().collect();
    let i = w.iter().position(|x| *x == "usecs/op")?;
    w.get(i.checked_sub(1)?)?.parse().ok()
}

/// The bound of a synchronous shipper with fsync: `shippers` shippers
/// whose no-fsync aggregate is `rate_off`, and syncs of `sync_us`.
pub fn bound(shippers: usize, rate_off: f64, sync_us: f64) -> f64 {
    if rate_off <= 0.0 {
        return 0.0;
    }
    let rtt_off = shippers as f64 / rate_off;
    shippers as f64 / (rtt_off + sync_us / 1e6)
}

/// The target: ≥ 0.8 × the bound from this many shippers up.
pub const TARGET: f64 = 0.8;
/// The smallest number of shippers the target applies to.
pub const TARGET_FROM: usize = 8;

/// For each entry of `shippers`: the median of `reps` interleaved rounds
/// of synchronous shipping with fsync off and on (`n` checkpoints per
/// shipper), the journal-record sync cost measured beside each round, and
/// the bound.
pub fn run(dir: &Path, shippers: &[usize], n: usize, reps: usize) -> Result<Value> {
    std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
    let record = record_len()?;
    let mut syncs = Vec::new();
    let mut rows = Vec::new();
    for &s in shippers {
        let (mut off, mut on, mut each) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..reps.max(1) {
            let sync = journal_sync_us(dir, record, 200, 1)?;
            syncs.push(sync);
            let mut pair = [0.0; 2];
            for (i, fsync) in [false, true].into_iter().enumerate() {
                eprintln!("dhp-bench tcp: bound, {s} shippers, fsync={fsync}");
                pair[i] = ship_run(&dir.join("rate"), fsync, None, ShipMode::Sync, s, n)?.rate;
            }
            off.push(pair[0]);
            on.push(pair[1]);
            // this round's fsync rate against the bound from this round's own figures
            let b = bound(s, pair[0], sync);
            each.push(if b > 0.0 { pair[1] / b } else { 0.0 });
        }
        rows.push(j!({"shippers": s, "no_fsync": median(off), "fsync": median(on), "round_ratios": each}));
    }
    syncs.push(journal_sync_us(dir, record, 200, 1)?);
    let sync_us = median(syncs.clone());
    for r in &mut rows {
        let s = r["shippers"].as_u64().unwrap_or(1) as usize;
        let b = bound(s, r["no_fsync"].as_f64().unwrap_or(0.0), sync_us);
        r["bound"] = j!(b);
        r["ratio"] = j!(if b > 0.0 { r["fsync"].as_f64().unwrap_or(0.0) / b } else { 0.0 });
    }
    let _ = std::fs::remove_dir_all(dir.join("rate"));
    Ok(j!({"rows": rows, "record_bytes": record, "sync_us": sync_us, "sync_us_all": syncs,
           "pg_test_fsync_us": pg_test_fsync_us(dir), "checkpoints_per_shipper": n, "reps": reps}))
}

/// The Markdown of a [`run`], with the verdicts.
pub fn markdown(v: &Value) -> String {
    let f = |x: &Value| x.as_f64().unwrap_or(0.0);
    let cross = v["pg_test_fsync_us"]
        .as_f64()
        .map(|u| format!("{u:.0} µs per 8 kB write + fdatasync (`pg_test_fsync -s 1`, same file system)"))
        .unwrap_or_else(|| "not run (no `pg_test_fsync` installed)".into());
    let mut s = format!(
        "\n### Synchronous shipping with fsync against its bound\n\n\
         The journal's sync, measured here: {:.0} µs per write + `fdatasync` of one {}-byte journal record, \
         overwritten in place in a preallocated file (median of {} loops of 200, one before each round); cross-check: \
         {cross}. A line cannot be acked before a sync that started after it was written, so N synchronous \
         shippers make at most N / (RTT_off + sync), RTT_off = N / (their --no-fsync rate). Median of {} \
         interleaved rounds, {} checkpoints per shipper, plaintext.\n\n\
         | shippers | --no-fsync | RTT_off µs | bound | fsync | fsync / bound | target | verdict | each round: fsync / its own bound |\n\
         |---:|---:|---:|---:|---:|---:|---|---|---|\n",
        f(&v["sync_us"]),
        v["record_bytes"],
        v["sync_us_all"].as_array().map(Vec::len).unwrap_or(0),
        v["reps"],
        v["checkpoints_per_shipper"],
    );
    for r in v["rows"].as_array().into_iter().flatten() {
        let n = r["shippers"].as_u64().unwrap_or(0) as usize;
        let off = f(&r["no_fsync"]);
        let ratio = f(&r["ratio"]);
        let (target, verdict) = if n >= TARGET_FROM {
            (format!("≥ {TARGET}×"), crate::pg_limit::verdict(ratio, TARGET))
        } else {
            ("(none below 8 shippers)".to_string(), "—")
        };
        s.push_str(&format!(
            "| {n} | {off:.0} | {:.0} | {:.0} | {:.0} | {ratio:.2}× | {target} | {verdict} | {} |\n",
            if off > 0.0 { n as f64 / off * 1e6 } else { 0.0 },
            f(&r["bound"]),
            f(&r["fsync"]),
            r["round_ratios"]
                .as_array()
                .map(|xs| xs.iter().map(|x| format!("{:.2}", f(x))).collect::<Vec<_>>().join(" · "))
                .unwrap_or_else(|| "—".into()),
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bound_adds_one_sync_to_the_no_fsync_round_trip() {
        // 8 shippers at 32,000/s without fsync: 250 µs each; + 150 µs.
        assert!((bound(8, 32_000.0, 150.0) - 20_000.0).abs() < 1e-6);
        assert_eq!(bound(8, 0.0, 150.0), 0.0);
        assert!(bound(128, 36_000.0, 150.0) < 36_000.0);
    }

    #[test]
    fn reads_pg_test_fsync_and_judges_from_eight_shippers() {
        let out = "Compare file sync methods using one 8kB write:\n        open_datasync        5000.000 ops/sec     200 usecs/op\n        fdatasync                          6250.123 ops/sec     160 usecs/op\n";
        assert_eq!(parse_pg_test_fsync(out), Some(160.0));
        assert_eq!(parse_pg_test_fsync("nothing"), None);
        let v = j!({"sync_us": 150.0, "record_bytes": 180, "sync_us_all": [150.0], "reps": 1,
                    "checkpoints_per_shipper": 10, "rows": [
            {"shippers": 1, "no_fsync": 5000.0, "fsync": 1000.0, "bound": 4000.0, "ratio": 0.25},
            {"shippers": 8, "no_fsync": 32000.0, "fsync": 17000.0, "bound": 20000.0, "ratio": 0.85,
             "round_ratios": [0.8, 0.853, 0.9]},
            {"shippers": 32, "no_fsync": 36000.0, "fsync": 20000.0, "bound": 31000.0, "ratio": 0.645}]});
        let md = markdown(&v);
        assert!(md.contains("| 1 | 5000 | 200 | 4000 | 1000 | 0.25× | (none below 8 shippers) | — |"), "{md}");
        assert!(md.contains("| 8 | 32000 | 250 | 20000 | 17000 | 0.85× | ≥ 0.8× | MET | 0.80 · 0.85 · 0.90 |"), "{md}");
        assert!(md.contains("| 0.25× | (none below 8 shippers) | — | — |"), "a run without rounds: {md}");
        assert!(md.contains("| 0.65× | ≥ 0.8× | **MISSED** |"), "{md}");
    }

    #[test]
    fn journal_probe_measures_a_positive_time() {
        let d = tempfile::tempdir().expect("tempdir");
        let us = journal_sync_us(d.path(), record_len().expect("record"), 5, 1).expect("probe");
        assert!(us > 0.0);
        assert_eq!(std::fs::read_dir(d.path()).expect("dir").count(), 0, "probe file left behind");
    }
}
