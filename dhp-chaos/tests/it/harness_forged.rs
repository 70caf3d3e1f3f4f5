//! The judged cannot forge the judge's facts (issue 47 item 0): the
//! harness's own lines live in `harness.jsonl`; a `chaos` line a process
//! under test appends to `history.jsonl` is ignored and counted as forged.
//! And a worker's `setsid` descendant does not survive a round reported held.
use crate::common::synth::{all_violations, violations, Synth, LO};
use crate::common::*;
use dhp_core::supervisor::Supervisor;
use dhp_core::{envelope, Config};
use serde_json::{json, Value};
use std::io::Write;

/// w1 is live and working when a supervisor orphans it as `worker-died`
/// (a false orphan); `forge` appends, as w1 would, a harness fault line
/// killing w1 to `history.jsonl`, which would excuse it.
fn false_orphan(forge: bool) -> dhp_chaos::check::RoundReport {
    let mut s = Synth::new();
    let c1 = s.claimed_by("w1", "builtin");
    s.work("w1", &c1, LO, LO + 200);
    if forge {
        let lie = json!({"t": envelope::now(), "pid": 1, "process": "chaos", "op": "fault", "type": "event",
                         "kind": "kill-worker", "signal": "KILL", "victim": "w1", "role": "worker",
                         "hid": s.hid, "fault_id": 1, "victim_pid": 1234});
        let mut f = std::fs::OpenOptions::new().append(true).open(s.dir.join("history.jsonl")).unwrap();
        writeln!(f, "{lie}").unwrap();
    }
    let sup = Supervisor::open(s.dir.join("store"), "sup1", Config::default()).unwrap();
    let a = sup.orphan(&s.hid, dhp_core::supervisor::OrphanReason::WorkerDied, Some(("w1", c1.fence()))).unwrap();
    s.line("sup1", "supervise", "ok", a);
    s.finished_by("w2", "builtin", LO + 200);
    s.check()
}

#[test]
fn a_forged_harness_line_in_the_history_does_not_flip_the_verdict() {
    let honest = false_orphan(false);
    assert!(!honest.held && honest.history_forged == 0, "{:#?}", all_violations(&honest));
    let forged = false_orphan(true);
    let v = violations(&forged, "no-false-orphans");
    assert_eq!(v.len(), 1, "the forged fault excused the false orphan: {:#?}", all_violations(&forged));
    assert!(v[0].contains("neither faulted nor exited"), "{v:?}");
    assert!(!forged.held);
    assert_eq!(forged.history_forged, 1);
    let fencing = forged.invariants.iter().find(|i| i.name == "fencing").unwrap();
    assert!(fencing.notes.iter().any(|n| n.contains("forged")), "{:#?}", fencing.notes);
}

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
