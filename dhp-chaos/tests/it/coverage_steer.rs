//! `--steer`: in a short round whose mix makes pauses rare (1 in 21) and
//! whose race rate is 1%, steering still reaches a woken zombie that tried
//! to write and a race of recoverers — from the harness's own records — and
//! each steered choice is in the history with its reason.
use crate::common::*;

fn hits(r: &Run, name: &str) -> u64 {
    r.totals()["coverage"]["situations"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["name"] == name)
        .and_then(|t| t["hits"].as_u64())
        .unwrap_or(0)
}

#[test]
fn steering_reaches_a_zombie_and_a_race_in_a_short_round() {
    let r = run_chaos(
        "cov-steer",
        &[
            "--steer",
            "--seed",
            "4545",
            "--handoffs",
            "2",
            "--dlq-handoffs",
            "0",
            "--chunks",
            "80",
            "--faults",
            "kill-worker=20,pause=1",
            "--race-rate",
            "0.01",
            "--failpoint-rate",
            "0",
            "--fault-seconds",
            "30",
            // the kill's moment (mid-chunk) is the OS's to give
            "--allow-uncovered",
            "mid-chunk-kill",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(hits(&r, "zombies") >= 1, "no woken zombie tried to write\n{}", r.dump());
    assert!(hits(&r, "races") >= 1, "no race of recoverers\n{}", r.dump());
    assert_eq!(r.totals()["invariants"]["zombies"]["status"], "held", "{}", r.dump());
    let hist = std::fs::read_to_string(r.out.join("round-0000/harness.jsonl")).unwrap();
    let steers: Vec<&str> = hist.lines().filter(|l| l.contains("\"op\":\"steer\"")).collect();
    assert!(steers.iter().any(|l| l.contains("\"kind\":\"pause\"")), "{steers:#?}");
    assert!(steers.iter().any(|l| l.contains("no race of recoverers yet")), "{steers:#?}");
    // the ledger counts them (the harness's steer records)
    let st = &r.totals()["coverage"]["steering"];
    assert_eq!(st["choices"].as_u64(), Some(steers.len() as u64), "{st}");
    assert!(r.stdout.contains(" steering (--steer): "), "{}", r.dump());
}
