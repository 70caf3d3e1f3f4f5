//! The judged cannot forge the judge's facts (issue 47 item 0): the
//! harness's own lines live in `harness.jsonl`; a `chaos` line a process
//! under test appends to `history.jsonl` is ignored and counted as forged.
//! (The round-level half, a worker's `setsid` descendant, is
//! dhp-chaos/tests/it/harness_forged.rs.)
use crate::common::synth::{all_violations, violations, Synth, LO};
use dhp_core::supervisor::Supervisor;
use dhp_core::{envelope, Config};
use serde_json::json;
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
