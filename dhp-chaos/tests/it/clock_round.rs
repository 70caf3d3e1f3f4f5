//! Clock faults: every worker and supervisor runs with a faked clock
//! (seconds off, 0.67–1.5× speed). Leases are judged across clocks, so
//! live workers get orphaned — safety must hold regardless (fencing), and
//! the report counts the false orphans and the work they cost.
use crate::common::*;

#[test]
fn skewed_clocks_keep_safety_and_report_false_orphans() {
    let r = bins::run_small(
        "clock-round",
        7,
        60,
        &["--clock", "1", "--clock-offset", "5", "--clock-rate", "1.5", "--faults", "kill-worker=3,pause=1"],
    );
    assert!(r.code == 0 || r.code == 1, "harness error\n{}", r.dump());
    for inv in ["fencing", "exactly-once", "checkpoints", "result", "zombies", "transport"] {
        assert!(r.violations(inv).is_empty(), "{inv}: {:#?}\n{}", r.violations(inv), r.dump());
        // completions may not happen on a loaded machine (skew livelocks leases); writes always do
        let always = ["fencing", "checkpoints", "transport"].contains(&inv);
        assert!(r.checked(inv) > 0 || !always, "{inv} checked nothing\n{}", r.dump());
    }
    let env = &r.results["rounds"][0]["env"];
    assert!(env["clock_faked"].as_u64().unwrap_or(0) >= 3, "every spawn is faked: {env}");
    assert!(
        env["false_orphans_skewed"].as_u64().unwrap_or(0) >= 1,
        "skew of seconds against 0.6 s leases orphans live workers: {env}\n{}",
        r.dump()
    );
    assert!(r.stdout.contains("false orphan(s)"), "{}", r.stdout);
    let svg = std::fs::read_to_string(r.out.join("round-0000").join("timeline.svg")).unwrap();
    assert!(svg.contains(" clock +") || svg.contains(" clock -"), "faked clocks are marked on the timeline");
}
