//! A role that dies as it starts, again and again, ends the round as a
//! harness error naming it and its log (exit 2), instead of being
//! respawned hundreds of times a second until the fault budget runs out.
use crate::common::*;

#[test]
fn supervisors_dying_at_start_end_the_round_as_a_harness_error() {
    let t0 = std::time::Instant::now();
    // `false` exits 1 at once: every supervisor dies at start
    let r = run_chaos(
        "start-deaths",
        &["--supervisors", "false", "--handoffs", "1", "--chunks", "400", "--fault-seconds", "60", "--seed", "9"],
    );
    assert_eq!(r.code, 2, "{}", r.dump());
    assert!(r.stderr.contains("supervisors died at start 10 times in a row"), "{}", r.dump());
    assert!(r.stderr.contains("procs/sup"), "the message names the log\n{}", r.dump());
    assert!(t0.elapsed().as_secs() < 30, "took {:?}", t0.elapsed());
    assert_eq!(r.results["exit_code"], 2, "{}", r.dump());
}
