//! An operation whose reply was an error while the database was down is
//! indeterminate: here w1's checkpoint committed, but its connection broke
//! with the crash before the reply, so w1 recorded `fail`. The checker must
//! let it have happened (the committed seq is w1's) — and the same failure
//! outside any outage stays a committed write no one recorded.

use dhp_chaos::check::{check_round, RoundReport};
use dhp_core::envelope::{self, Budget, BuildOptions};
use dhp_core::supervisor::Supervisor;
use dhp_core::{Config, Runner, TaskContext};
use dhp_testkit::store as testing;
use dhp_workload::census;
use serde_json::{json, Value};
use std::path::Path;

const LO: u64 = 1000;
const HI: u64 = 1500;
const CHUNK: u64 = 100;

fn line(hist: &mut crate::common::SplitHistory, process: &str, op: &str, ty: &str, extra: Value) {
    let pid = if process == "chaos" {
        1
    } else {
        100 + process.len() as i64 * 7 + process.bytes().map(i64::from).sum::<i64>()
    };
    let mut v = json!({"t": envelope::now(), "pid": pid, "process": process, "op": op, "type": ty});
    v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    hist.write(&v);
    std::thread::sleep(std::time::Duration::from_millis(2));
}

fn state(next: u64) -> Value {
    let (c, s) = census::chunk(LO, next);
    json!({"next_n": next, "count": c, "total": s})
}

fn checkpoint(hist: &mut crate::common::SplitHistory, hid: &str, who: &str, ctx: &TaskContext, next: u64) {
    line(hist, who, "checkpoint", "invoke", json!({"hid": hid, "holder": who, "fence": ctx.fence(), "next_n": next}));
    let seq = ctx.checkpoint(&state(next)).unwrap();
    line(
        hist,
        who,
        "checkpoint",
        "ok",
        json!({"hid": hid, "holder": who, "fence": ctx.fence(), "seq": seq, "next_n": next}),
    );
}

/// w1 claims and checkpoints twice; its third checkpoint commits but is
/// recorded as failed (inside a database outage when `crash`); w1 exits,
/// the handoff is orphaned, w2 recovers and finishes.
fn round(dir: &Path, crash: bool) -> RoundReport {
    for d in ["store", "transport", "procs"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    let runner = Runner::open(dir.join("store"), "chaos", Config::default()).unwrap();
    let budget = Budget { max_steps: 1000, max_spend_usd: 1.0, max_wallclock_s: 3600.0, max_attempts: 10 };
    let env = envelope::build(
        census::KIND,
        census::inputs(LO, HI, CHUNK),
        census::output_schema(),
        BuildOptions { budget: Some(budget.to_value()), ..Default::default() },
    )
    .unwrap();
    let hid = runner.dispatch(&env).unwrap();
    let t0 = envelope::now();
    let h = &mut crate::common::SplitHistory::open(dir);
    for w in ["w1", "w2"] {
        line(h, "chaos", "spawn", "event", json!({"name": w, "role": "worker", "impl": "builtin", "hid": hid}));
    }
    line(h, "w1", "claim", "invoke", json!({"hid": hid, "holder": "w1"}));
    let c1 = runner.with_id("w1").unwrap().claim(&hid).unwrap();
    line(h, "w1", "claim", "ok", json!({"hid": hid, "holder": "w1", "fence": c1.fence()}));
    checkpoint(h, &hid, "w1", &c1, LO + 100);
    checkpoint(h, &hid, "w1", &c1, LO + 200);
    line(h, "w1", "checkpoint", "invoke", json!({"hid": hid, "holder": "w1", "fence": c1.fence(), "next_n": LO + 300}));
    c1.checkpoint(&state(LO + 300)).unwrap();
    if crash {
        line(
            h,
            "chaos",
            "fault",
            "event",
            json!({"fault_id": 1, "kind": "db-crash", "signal": "CRASH", "victim": "postgres", "role": "database"}),
        );
    }
    line(
        h,
        "w1",
        "checkpoint",
        "fail",
        json!({"hid": hid, "holder": "w1", "fence": c1.fence(), "next_n": LO + 300,
        "error": "db error: FATAL: terminating connection due to immediate shutdown command"}),
    );
    line(h, "chaos", "exit", "event", json!({"name": "w1", "role": "worker", "hid": hid, "code": 1}));
    if crash {
        line(h, "chaos", "observe", "event", json!({"what": "db-up", "fault_id": 1}));
    }
    // well after the outage
    std::thread::sleep(std::time::Duration::from_millis(1100));
    testing::expire_lease(&runner, &hid).unwrap();
    let sup = Supervisor::open(dir.join("store"), "sup1", Config::default()).unwrap();
    for a in sup.scan().unwrap() {
        line(h, "sup1", "supervise", "ok", a.to_json());
    }
    line(h, "w2", "recover", "invoke", json!({"hid": hid, "holder": "w2"}));
    let mut c2 = runner.with_id("w2").unwrap().recover(&hid).unwrap();
    line(h, "w2", "recover", "ok", json!({"hid": hid, "holder": "w2", "fence": c2.fence()}));
    let mut n = LO + 300;
    while n < HI {
        n += CHUNK;
        checkpoint(h, &hid, "w2", &c2, n);
    }
    line(h, "w2", "complete", "invoke", json!({"hid": hid, "holder": "w2", "fence": c2.fence()}));
    c2.complete(&census::expected(LO, HI, CHUNK)).unwrap();
    line(h, "w2", "complete", "ok", json!({"hid": hid, "holder": "w2", "fence": c2.fence()}));
    let t_end = envelope::now();
    let meta = json!({
        "config": {"seed": 1, "round": 0, "workers": {"kind": "builtin"}, "supervisors": {"kind": "builtin"},
                   "replay": "synthetic", "timing": {"leader_ttl_s": 5.0, "supervisor_scan_s": 1.0}},
        "hids": [hid], "t0": t0, "t_faults_end": t_end, "t_end": t_end,
    });
    std::fs::write(dir.join("round.json"), serde_json::to_vec(&meta).unwrap()).unwrap();
    check_round(dir).unwrap()
}

fn fencing(r: &RoundReport) -> Vec<String> {
    r.invariants.iter().find(|i| i.name == "fencing").map(|i| i.violations.clone()).unwrap_or_default()
}

#[test]
fn an_error_during_the_outage_may_have_committed_and_one_outside_it_did_not() {
    let tmp = tempfile::tempdir().unwrap();
    let r = round(&tmp.path().join("crash"), true);
    assert!(fencing(&r).is_empty(), "the failed-during-outage checkpoint is w1's commit: {:#?}", fencing(&r));
    let lost = r.invariants.iter().find(|i| i.name == "no-lost-commits-across-db-crash").unwrap();
    assert!(
        lost.notes.iter().any(|n| n.contains("1 operation(s) failed during a database fault")),
        "{:#?}",
        lost.notes
    );

    let r = round(&tmp.path().join("no-crash"), false);
    assert!(
        fencing(&r).iter().any(|v| v.contains("committed but no recorded operation wrote them")),
        "without an outage the failure is definite: {:#?}",
        fencing(&r)
    );
}
