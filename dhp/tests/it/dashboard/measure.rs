//! The dashboard's cost on a store of 100,000 running handoffs (ignored:
//! a measurement, not a check; docs/dashboard.md quotes its output):
//!
//! ```sh
//! cargo test -p dhp --test it dashboard::measure -- --ignored --nocapture
//! ```
//!
//! `DASH_MEASURE_N` handoffs (default 100000), `DASH_MEASURE_S` seconds per
//! phase (default 30), `DASH_MEASURE_BIN` a `dhp` to measure instead of the
//! test build (e.g. `target/release/dhp`). Phases: idle with one page's
//! event stream open; then 100 handoffs changing per second (a writer
//! rewrites 10 envelopes and their ownership rows every 100 ms, as
//! checkpointing workers do); then the page's load in headless Chromium
//! (first byte, DOM ready, first rows shown).
use crate::dashboard_support::*;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn cpu_s(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    // fields 14 and 15 (utime, stime) are 12 and 13 after the name
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).unwrap().unwrap_or(100) as f64;
    ticks as f64 / hz
}

fn env_num(k: &str, d: u64) -> u64 {
    std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d)
}

#[test]
#[ignore = "measurement; see the module's doc"]
fn cost_on_100k_running_handoffs() {
    let n = env_num("DASH_MEASURE_N", 100_000);
    let secs = env_num("DASH_MEASURE_S", 30);
    let dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let by = fill_with(dir.path(), n, |_| "running");
    println!("store: {n} running handoffs in {:.1} s", t.elapsed().as_secs_f64());
    let hids = by["running"].clone();

    let d = match std::env::var("DASH_MEASURE_BIN") {
        Ok(bin) => Dash::start_bin(std::path::Path::new(&bin), dir.path(), &["--poll", "1"]),
        Err(_) => Dash::start(dir.path(), &["--poll", "1"]),
    };
    let pid = d.child.as_ref().unwrap().id();
    std::thread::sleep(Duration::from_secs(2));
    println!("dashboard: started, {:.2} CPU s so far (includes the start-up status read)", cpu_s(pid));
    // one page's event stream stays open throughout
    let port = d.port;
    let events = Arc::new(std::sync::atomic::AtomicU64::new(0));
    {
        let events = events.clone();
        std::thread::spawn(move || {
            let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            use std::io::Write;
            write!(s, "GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n")
                .unwrap();
            let mut buf = [0u8; 65536];
            while let Ok(k) = s.read(&mut buf) {
                if k == 0 {
                    return;
                }
                events
                    .fetch_add(buf[..k].windows(12).filter(|w| w == b"event: delta").count() as u64, Ordering::Relaxed);
            }
        });
    }

    let c0 = cpu_s(pid);
    std::thread::sleep(Duration::from_secs(secs));
    let idle = (cpu_s(pid) - c0) * 60.0 / secs as f64;
    println!("idle: {idle:.3} CPU s per minute ({} delta events)", events.load(Ordering::Relaxed));

    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (stop, root) = (stop.clone(), dir.path().to_path_buf());
        std::thread::spawn(move || {
            let c = rusqlite::Connection::open(root.join("dhp.sqlite3")).unwrap();
            c.busy_timeout(Duration::from_secs(5)).unwrap();
            let (mut i, mut changed) = (0usize, 0u64);
            let start = Instant::now();
            while !stop.load(Ordering::SeqCst) {
                let now = dhp_core::envelope::now();
                c.execute_batch("BEGIN IMMEDIATE").unwrap();
                for _ in 0..10 {
                    let h = &hids[(i * 7919) % hids.len()];
                    i += 1;
                    c.execute(
                        "UPDATE handoffs SET envelope_json = json_set(envelope_json, '$.execution.steps', \
                         COALESCE(json_extract(envelope_json, '$.execution.steps'), 0) + 1), updated_at = ?2 WHERE hid = ?1",
                        rusqlite::params![h, now],
                    )
                    .unwrap();
                    c.execute(
                        "UPDATE ownership SET lease_expires_at = ?2 + 3600, updated_at = ?2 WHERE hid = ?1",
                        rusqlite::params![h, now],
                    )
                    .unwrap();
                    changed += 1;
                }
                c.execute_batch("COMMIT").unwrap();
                let due = start + Duration::from_millis(100 * (changed / 10));
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
            }
            changed as f64 / start.elapsed().as_secs_f64()
        })
    };
    std::thread::sleep(Duration::from_secs(2));
    let (c0, e0) = (cpu_s(pid), events.load(Ordering::Relaxed));
    std::thread::sleep(Duration::from_secs(secs));
    let busy = (cpu_s(pid) - c0) * 60.0 / secs as f64;
    let evs = events.load(Ordering::Relaxed) - e0;
    stop.store(true, Ordering::SeqCst);
    let rate = writer.join().unwrap();
    println!("100 changes/s: {busy:.3} CPU s per minute (writer {rate:.0} handoffs/s, {evs} delta events in {secs} s)");

    let mut b = Browser::start();
    b.navigate(&format!("{}login?token={TOKEN}", d.url));
    wait_some("logged in", 30.0, || (b.peek("location.pathname") == "/").then_some(()));
    let mut loads = Vec::new();
    for _ in 0..5 {
        b.navigate(&d.url);
        let v = wait_some("the page and its first rows", 30.0, || {
            let v = b.peek(
                "(() => { const n = performance.getEntriesByType('navigation')[0]; \
                   const f = Number(document.body.dataset.firstRowsMs || 0); \
                   return n && n.domContentLoadedEventEnd > 0 && f > 0 ? [n.responseStart - n.startTime, n.domContentLoadedEventEnd - n.startTime, f] : null; })()",
            );
            (!v.is_null()).then_some(v)
        });
        loads.push((v[0].as_f64().unwrap(), v[1].as_f64().unwrap(), v[2].as_f64().unwrap()));
    }
    loads.sort_by(|a, b| a.1.total_cmp(&b.1));
    let (fb, dom, rows) = loads[loads.len() / 2];
    println!("page load (median of 5): first byte {fb:.1} ms, DOM ready {dom:.1} ms, first rows {rows:.1} ms");
    let t = Instant::now();
    let p = d.json("/api/handoffs?limit=50&status=running&after=8");
    println!("one page of 50 (status filter, keyset): {:.1} ms over HTTP", t.elapsed().as_secs_f64() * 1e3);
    assert_eq!(p["rows"].as_array().unwrap().len(), 50);
}
