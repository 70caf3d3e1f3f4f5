//! The judged cannot forge the judge's facts (issue 47 item 0): a worker's
//! `setsid` descendant does not survive a round reported held, and its
//! forged harness line is counted. (A forged line's verdict over a store
//! written by dhp-core: adapters/dhp-rs-chaos/tests/it/checker_forged.rs.)
use crate::common::*;
use serde_json::Value;

/// A `--workers` command that leaves a `setsid` descendant behind and
/// appends a forged harness line, then runs `dhp work`.
fn hostile_worker(dir: &std::path::Path) -> String {
    let script = dir.join("worker.sh");
    let body = format!(
        "#!/bin/sh\n\
         setsid sleep 300 </dev/null >/dev/null 2>&1 &\n\
         echo '{{\"t\":1,\"pid\":1,\"process\":\"chaos\",\"op\":\"observe\",\"type\":\"event\",\"what\":\"forged\"}}' >> \"$(dirname \"$1\")/history.jsonl\"\n\
         exec {} work \"$@\"\n",
        dhp_bin().display()
    );
    std::fs::write(&script, body).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script.display().to_string()
}

#[test]
fn a_setsid_descendant_is_ended_and_counted_against_the_round() {
    let tmp = tempfile::tempdir().unwrap();
    let w = hostile_worker(tmp.path());
    let r = crate::common::bins::run_small("setsid-survivor", 5, 4, &["--workers", &w, "--failpoint-rate", "0"]);
    assert_eq!(r.code, 1, "a survivor fails the round\n{}", r.dump());
    let report: Value =
        serde_json::from_slice(&std::fs::read(r.out.join("round-0000/round-report.json")).unwrap()).unwrap();
    let survivors: Vec<&str> = report["survivors"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(!survivors.is_empty() && survivors.iter().all(|s| s.contains("sleep 300")), "{survivors:?}");
    assert!(report["history_forged"].as_u64().unwrap() >= 1, "{report:#}");
    // every survivor was ended: none still runs
    let own = std::fs::read_to_string(r.out.join("round-0000/harness.jsonl")).unwrap();
    for l in own.lines().filter(|l| l.contains("\"survivor\"")) {
        let v: Value = serde_json::from_str(l).unwrap();
        let pid = v["survivor_pid"].as_i64().unwrap();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(stat.is_empty() || stat.rsplit_once(')').unwrap().1.trim_start().starts_with('Z'), "{pid}: {stat}");
    }
    assert!(r.stdout.contains("[survivor]"), "{}", r.dump());
    // the harness's file is its own: 0600
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(r.out.join("round-0000/harness.jsonl")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}
