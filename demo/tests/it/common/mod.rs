//! Shared checks of the end-to-end tests: run the demo binary, then verify
//! what it left on disk independently of what it printed.

#![allow(dead_code)]

use demo::fetch::Fetcher;
use demo::mirror::{Mirror, MirrorConfig};
use demo::record;
use dhp_core::transport::log::{self, Line};
use dhp_core::{Config, Runner};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub const PAGES: usize = 60;
pub const KILL_AT: usize = 20;

pub struct DemoRun {
    pub code: i32,
    pub summary: Value,
    pub stderr: String,
    pub dir: PathBuf,
    pub elapsed: Duration,
}

/// Run `demo --json --keep DIR` with short leases and small mirror delays.
pub fn run_demo(dir: &Path, seed: u64, extra: &[&str]) -> DemoRun {
    let run_dir = dir.join("run");
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_demo"))
        .args(["--json", "--seed", &seed.to_string(), "--keep"])
        .arg(&run_dir)
        .args(["--mirror-delay-ms", "1-6", "--phase-timeout-s", "60"])
        .args(extra)
        .env("DHP_LEASE_INTERVAL_S", "0.5")
        .env("DHP_LEASE_MAX_MISSED", "3")
        .env("DHP_SUPERVISOR_SCAN_S", "0.2")
        .env("DHP_LEADER_TTL_S", "2")
        .env_remove("DHP_TRANSPORT_TOKEN")
        .output()
        .expect("running the demo");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let summary: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("--json must print one JSON object ({e}); stdout: {stdout}\nstderr: {stderr}"));
    DemoRun { code: out.status.code().unwrap_or(-1), summary, stderr, dir: run_dir, elapsed: started.elapsed() }
}

/// The checkpoint seqs in a transport log, in file order.
pub fn log_seqs(path: &Path) -> Vec<i64> {
    log::read_log(path, &Config::default())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .into_iter()
        .filter_map(|l| match l {
            Line::Record(v) if v["type"] == "checkpoint" => v["seq"].as_i64(),
            _ => None,
        })
        .collect()
}

/// Everything a green run must have left behind.
pub fn check_green_run(r: &DemoRun, seed: u64) {
    let s = &r.summary;
    assert_eq!(r.code, 0, "demo exit code; summary {s}\nstderr:\n{}", r.stderr);
    assert_eq!(s["verdict"], "passed", "{s}");
    assert!(r.stderr.contains("KILL DEMO PASSED"), "{}", r.stderr);
    // Every figure printed is measured: no "seq ≤ -1" or "0.0 ms" placeholders.
    assert!(!r.stderr.contains("≤ -1") && !r.stderr.contains(" 0.0 ms"), "{}", r.stderr);
    assert_eq!(s["completed_pages"], PAGES as u64);
    assert_eq!(s["refetched"].as_array().map(Vec::len), Some(0), "{s}");

    // The mirror's own counters: 1–20 once each, 21 twice (killed + resumed), rest once.
    let counts: Vec<u64> = s["mirror_counts"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    let mut want = vec![1u64; PAGES];
    want[KILL_AT] = 2;
    assert_eq!(counts, want, "per-page request counts");
    assert_eq!(s["mirror_unknown_requests"], 0);

    // The kill really happened mid-request, and detection was by liveness.
    assert_eq!(s["kill"]["signal"], "SIGKILL");
    assert_eq!(s["kill"]["pages_done"], KILL_AT as u64);
    assert!(s["kill"]["request_in_flight_s"].as_f64().unwrap() >= 0.0);
    assert_eq!(s["orphan"]["reason"], "worker-died", "{s}");
    let k2o = s["timings"]["kill_to_orphan_s"].as_f64().unwrap();
    assert!((0.0..1.0).contains(&k2o), "kill → orphan took {k2o}s; liveness should notice in milliseconds");
    assert_eq!(s["worker_b_start"]["resume_index"], KILL_AT as u64);
    assert_ne!(s["worker_a_pid"], s["worker_b_pid"]);

    let hid = s["handoff_id"].as_str().unwrap().to_string();
    let host_a = r.dir.join("host-a");
    let host_b = r.dir.join("host-b");

    // Host A: orphaned, 20 checkpoints, nothing after the kill.
    let ra = Runner::open(&host_a, "test-reader", Config::default()).unwrap();
    let st = ra.status(&hid).unwrap();
    assert_eq!(st["status"], "orphaned", "{st}");
    assert_eq!(st["checkpoints"], KILL_AT as u64);
    assert_eq!(ra.last_checkpoint(&hid).unwrap().unwrap()["next"], KILL_AT as u64);

    // Host B's transport log: seq 0..19, each exactly once (sync shipping, nothing lost).
    let log_b = log::log_path(&host_b.join("transport"), &hid).unwrap();
    assert_eq!(log_seqs(&log_b), (0..KILL_AT as i64).collect::<Vec<_>>(), "host B's shipped log");
    assert_eq!(s["ingest"]["checkpoints_ingested"], KILL_AT as u64);
    assert_eq!(s["ingest"]["lines_skipped"], 0);

    // Host B: completed with the dataset's hash, 60 checkpoints.
    let rb = Runner::open(&host_b, "test-reader", Config::default()).unwrap();
    let st = rb.status(&hid).unwrap();
    assert_eq!(st["status"], "completed", "{st}");
    assert_eq!(st["checkpoints"], PAGES as u64);
    let csv_path = host_b.join("dataset").join("wiki-pages.csv");
    let csv = std::fs::read(&csv_path).unwrap();
    assert_eq!(st["result"]["dataset_sha256"], hex::encode(Sha256::digest(&csv)));
    assert_eq!(st["result"]["resumed_from"], KILL_AT as u64);
    assert_eq!(st["result"]["fetched_this_run"], (PAGES - KILL_AT) as u64);

    // The CSV, row by row, against what a fresh mirror with the same seed serves.
    let titles = demo::titles::pick(seed, PAGES).unwrap();
    let m = Mirror::start(
        MirrorConfig {
            seed,
            titles: titles.clone(),
            min_delay_ms: 0,
            max_delay_ms: 0,
            hold: None,
            hold_timeout: Duration::from_secs(1),
        },
        vec![Mirror::loopback_listener().unwrap()],
    )
    .unwrap();
    let f = Fetcher::new(&m.base_url(0), Duration::from_secs(10));
    let rows = record::read_csv(&csv_path).unwrap();
    assert_eq!(rows.len(), PAGES);
    for (i, (row, title)) in rows.iter().zip(&titles).enumerate() {
        let served = f.fetch(title).unwrap();
        assert_eq!(row.index, i as u64);
        assert_eq!(&row.title, title);
        assert_eq!(row.bytes, served.body.len() as u64, "page {} bytes", i + 1);
        assert_eq!(row.sha256, hex::encode(Sha256::digest(&served.body)), "page {} sha256", i + 1);
        assert_eq!(row.http_status, 200);
        assert!(row.url.ends_with(&served.url[m.base_url(0).len()..]), "page {} url {}", i + 1, row.url);
        let (by, host, attempt, pid) = if i < KILL_AT {
            ("worker-A", "A", 1, &s["worker_a_pid"])
        } else {
            ("worker-B", "B", 2, &s["worker_b_pid"])
        };
        assert_eq!((row.fetched_by.as_str(), row.host.as_str(), row.attempt), (by, host, attempt), "page {}", i + 1);
        assert_eq!(json_u64(pid), u64::from(row.pid), "page {} pid", i + 1);
    }
}

fn json_u64(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}
