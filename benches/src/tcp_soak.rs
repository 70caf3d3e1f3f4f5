//! `dhp-bench tcp-soak`: bounded server state. A `dhp transport` process
//! (fsync on) receives N handoffs (one envelope and one checkpoint each,
//! shipped asynchronously by `shippers` shippers); its RSS is sampled every
//! `every` handoffs. Flat samples mean per-handoff state is not retained.

use crate::fixture::{self, io_err};
use crate::tcp_rates::ServerProc;
use dhp_core::envelope::utcnow_iso;
use dhp_core::transport::net::{ShipMode, ShipperOptions, TcpShipper};
use dhp_core::transport::{log, Shipper};
use dhp_core::TransportKind;
use dhp_core::{json, Error, Result};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Handoffs per shipper instance (a fresh one per batch keeps the bench's
/// own memory bounded; the server is what is measured).
const BATCH: u64 = 5_000;

fn ship_share(addr: &str, k: u64, shippers: u64, n: u64, done: &AtomicU64, until: Instant) -> Result<()> {
    let mut i = k;
    while i < n && Instant::now() < until {
        // A generous wait: on a loaded machine a backlog drains slowly.
        let opts = ShipperOptions {
            mode: ShipMode::Async { max_lag: 256 },
            call_timeout: Duration::from_secs(600),
            ..Default::default()
        };
        let mut sh = TcpShipper::new(addr, opts)?;
        let mut in_batch = 0;
        while i < n && in_batch < BATCH && (in_batch % 100 != 0 || Instant::now() < until) {
            let env = fixture::sdk_envelope(1_000_000_000 + i)?;
            let hid = env["handoff_id"].as_str().unwrap_or_default().to_string();
            sh.ship_envelope(&hid, &env)?;
            let st = fixture::small_state(i);
            let (_, hash) = json::state_text_and_hash(&st)?;
            sh.ship_checkpoint(&hid, 0, &log::checkpoint_line(0, &st, &hash, &utcnow_iso())?)?;
            i += shippers;
            in_batch += 1;
            // Queued, at most `max_lag` lines ahead of the acks.
            done.fetch_add(1, Ordering::Relaxed);
        }
        sh.close()?;
    }
    Ok(())
}

/// Ship `n` handoffs, or as many as `max` allows; sample the server's RSS
/// about every `every`.
pub fn soak(dhp: &Path, dir: &Path, n: u64, every: u64, shippers: u64, max: Duration) -> Result<Value> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
    let srv = ServerProc::start(dhp, &dir.join("logs"), &[])?;
    std::thread::sleep(Duration::from_millis(300));
    let done = AtomicU64::new(0);
    let t0 = Instant::now();
    let until = t0 + max;
    let mut samples = vec![json!({"handoffs": 0, "rss_kb": srv.rss_kb(), "t_s": 0.0})];
    let results: Vec<Result<()>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..shippers)
            .map(|k| {
                let (addr, done) = (srv.addr.clone(), &done);
                s.spawn(move || ship_share(&addr, k, shippers, n, done, until))
            })
            .collect();
        let mut next = every;
        while hs.iter().any(|h| !h.is_finished()) {
            std::thread::sleep(Duration::from_millis(200));
            let d = done.load(Ordering::Relaxed);
            if d >= next {
                samples.push(json!({"handoffs": d, "rss_kb": srv.rss_kb(), "t_s": t0.elapsed().as_secs_f64().round()}));
                eprintln!("dhp-bench tcp-soak: {d} handoffs, server RSS {} kB", srv.rss_kb());
                next = (d / every + 1) * every;
            }
        }
        hs.into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(Error::transport(TransportKind::Server, "shipper panicked"))))
            .collect()
    });
    for r in results {
        r?;
    }
    let secs = t0.elapsed().as_secs_f64();
    let shipped = done.load(Ordering::Relaxed);
    samples.push(json!({"handoffs": shipped, "rss_kb": srv.rss_kb(), "t_s": secs.round()}));
    // After the load: every shipper closed, the server idle for a while.
    std::thread::sleep(Duration::from_secs(5));
    let rss_after_kb = srv.rss_kb();
    let rss_peak_kb = samples.iter().filter_map(|x| x["rss_kb"].as_u64()).max().unwrap_or(0);
    let rss_before_kb = samples[0]["rss_kb"].clone();
    let clean = srv.stop();
    let logs = std::fs::read_dir(dir.join("logs"))
        .map(|d| d.filter(|e| e.as_ref().is_ok_and(|e| e.path().extension().is_some_and(|x| x == "log"))).count())
        .unwrap_or(0);
    eprintln!("dhp-bench tcp-soak: removing {logs} logs");
    let _ = std::fs::remove_dir_all(dir);
    Ok(json!({"handoffs": shipped, "planned": n, "shippers": shippers, "logs": logs, "seconds": secs.round(),
               "rate": (shipped as f64 / secs).round(), "rss_before_kb": rss_before_kb,
               "rss_peak_kb": rss_peak_kb, "rss_after_kb": rss_after_kb,
              "clean_exit": clean, "samples": samples}))
}

/// The soak's section of RESULTS.md, from its JSON summary.
pub fn markdown(v: &Value) -> String {
    let mut s = format!(
        "\nSoak (`dhp-bench tcp-soak`): {} of {} planned handoffs (envelope + one checkpoint each, asynchronous, {} shippers, fsync on) \
         in {} s ({}/s), {} logs written; server RSS by handoffs shipped:\n\n| handoffs | RSS MB |\n|---:|---:|\n",
        v["handoffs"], v["planned"], v["shippers"], v["seconds"], v["rate"], v["logs"]
    );
    for x in v["samples"].as_array().into_iter().flatten() {
        s.push_str(&format!("| {} | {:.1} |\n", x["handoffs"], x["rss_kb"].as_f64().unwrap_or(0.0) / 1024.0));
    }
    let mb = |k: &str| v[k].as_f64().unwrap_or(0.0) / 1024.0;
    s.push_str(&format!(
        "\nServer RSS before {:.1} MB, peak of the samples {:.1} MB, after (every shipper closed, 5 s idle) {:.1} MB.\n",
        mb("rss_before_kb"),
        mb("rss_peak_kb"),
        mb("rss_after_kb")
    ));
    s
}
