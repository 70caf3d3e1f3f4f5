//! Issue 44's clean-room case: a worker that, woken after its replacement,
//! notices it lost the handoff and exits without asking for work or
//! writing. Its fence is never tested, so `zombies` is not exercised — not
//! held — and the run ends HELD, NOT COVERED: zombies (exit 4), even with
//! `--steer` pausing it and extending the round. (Now and then a pause
//! lands between the mutant's ownership check and its request for work: it
//! did try then, and the run must say `zombies` held — the other side of
//! the same rule.)
use crate::common::*;

#[test]
fn a_zombie_that_never_tries_to_write_leaves_zombies_not_covered() {
    let w = bins::mutant_worker("quit-when-replaced");
    let r = run_chaos(
        "cov-zombie-quits",
        &[
            "--steer",
            "--seed",
            "8",
            "--handoffs",
            "1",
            "--dlq-handoffs",
            "0",
            "--chunks",
            "60",
            "--workers",
            &w,
            "--faults",
            "pause=1",
            "--race-rate",
            "0",
            "--failpoint-rate",
            "0",
            "--fault-interval",
            "1,2",
            "--fault-seconds",
            "30",
        ],
    );
    let t = r.totals();
    assert!(t["zombies_woken"].as_u64().unwrap_or(0) >= 1, "a replaced worker must have been woken\n{}", r.dump());
    let tried = t["coverage"]["situations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "zombies")
        .and_then(|x| x["hits"].as_u64())
        .unwrap();
    if tried == 0 {
        // the usual case: every woken zombie quit before asking for work
        assert_eq!(r.code, 4, "{}", r.dump());
        let last = r.stdout.lines().last().unwrap_or("");
        assert!(last.starts_with("dhp-chaos: HELD, NOT COVERED: zombies "), "{last}");
        assert_eq!(t["invariants"]["zombies"]["status"], "not-exercised", "{}", r.dump());
        // steering added handoffs for the missing zombie
        assert!(t["coverage"]["steering"]["extensions"].as_u64().unwrap_or(0) >= 1, "{}", r.dump());
    } else {
        // a pause landed between its ownership check and its request (a
        // check-then-act worker does ask, now and then): then it was tested
        assert_eq!(r.code, 0, "{}", r.dump());
        assert_eq!(t["invariants"]["zombies"]["status"], "held", "{}", r.dump());
    }
}
