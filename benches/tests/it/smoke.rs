//! Smoke test of the comparison (`benches/compare.sh --quick`, minus the
//! release build): the dhp-bench binary and `ref_bench.py` run in quick
//! mode on shared fixtures and the report renders. Keeps the comparison
//! from rotting; takes seconds.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_dhp-bench");

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?} failed: {}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).to_string()
}

fn bench(dir: &Path, args: &[&str]) -> String {
    let _ = dir;
    run(Command::new(BIN).args(args))
}

fn read(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn rate(v: &Value, key: &str) -> f64 {
    v.pointer(&format!("/ops/{key}/rate")).and_then(Value::as_f64).unwrap_or_else(|| panic!("no rate for {key}: {v}"))
}

#[test]
fn quick_comparison_runs_end_to_end() {
    let t0 = std::time::Instant::now();
    let tmp = tempfile::Builder::new().prefix("compare-smoke-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = tmp.path();
    let ds = d.to_str().unwrap();
    let p = |f: &str| d.join(f).to_str().unwrap().to_string();

    bench(d, &["machine", "--dir", ds, "--out", &p("machine.json")]);
    bench(d, &["fixtures", "--dir", ds, "--quick"]);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("ref_bench.py");
    run(Command::new(dhp_testkit::python()).arg(&script).args([
        "run",
        "--dir",
        ds,
        "--quick",
        "--out",
        &p("ref.json"),
    ]));
    bench(d, &["run", "--dir", ds, "--quick", "--out", &p("ours.json")]);

    // Peak RSS of `dhp work` (the workspace's dhp, built if missing).
    let dhp = dhp_testkit::dhp_bin();
    bench(d, &["rss", "--dhp", dhp.to_str().unwrap(), "--dir", &p("work"), "--out", &p("rss-ours.json")]);
    let kib = read(&d.join("rss-ours.json"))["max_rss_kib"].as_f64().unwrap();
    assert!(kib > 500.0 && kib < 200_000.0, "implausible dhp work peak RSS {kib} KiB");
    bench(d, &["peak-rss", "--out", &p("rss-ref.json"), "--", "/bin/sh", "-c", "true"]);

    let ours = read(&d.join("ours.json"));
    let reference = read(&d.join("ref.json"));
    for key in [
        "fsync_raw",
        "sqlite_commit",
        "sqlite_commit_pages_dispatch",
        "sqlite_commit_pages_claim",
        "envelope_build",
        "canonical_hash_1k",
        "canonical_hash_100k",
        "dispatch",
        "claim",
        "checkpoint_100",
        "checkpoint_1000",
        "dispatch_batched",
        "claim_batched",
        "group_commit_best",
        "recover_race",
        "ingest",
        "ship_tcp_sync",
        "ship_tcp_async",
        "scan",
    ] {
        assert!(rate(&ours, key) > 0.0, "{key}");
    }
    // A dispatch and a claim each change a few pages: the handoff row and
    // its index entries (claim: the ownership row and its indexes too).
    for key in ["dispatch", "claim"] {
        let frames = ours["ops"][key]["wal_frames"].as_f64().unwrap_or(0.0);
        assert!((1.5..20.0).contains(&frames), "{key}: {frames} WAL frames per call");
    }
    for key in [
        "envelope_build",
        "canonical_hash_1k",
        "canonical_hash_100k",
        "dispatch",
        "claim",
        "checkpoint_100",
        "checkpoint_1000",
        "recover_race",
        "ingest",
        "ship_tcp_sync",
        "scan",
    ] {
        assert!(rate(&reference, key) > 0.0, "reference {key}");
    }

    let table = bench(
        d,
        &[
            "report",
            "--ours",
            &p("ours.json"),
            "--ref",
            &p("ref.json"),
            "--rss-ours",
            &p("rss-ours.json"),
            "--rss-ref",
            &p("rss-ref.json"),
            "--machine",
            &p("machine.json"),
            "--command",
            "smoke",
        ],
    );
    for needle in ["| checkpoint, 100 earlier |", "| ingest, 10k-line log |", "### Targets", "### Machine"] {
        assert!(table.contains(needle), "report lacks {needle:?}:\n{table}");
    }
    // Quick sizes: the report says it is a smoke run and judges no target
    // (a verdict on smoke sizes against full-run targets would mislead).
    assert!(table.starts_with("**Smoke run (`--quick`)**"), "{table}");
    assert!(table.contains("Not judged: a smoke run"), "{table}");
    assert!(!table.contains("MISSED") && !table.contains("| MET |"), "{table}");
    eprintln!("smoke: comparison ran in {:.1}s", t0.elapsed().as_secs_f64());
}
