//! An adapter that answers `hello` and then never answers again. The
//! first request times out; a probe of a fresh process times out too, and
//! every remaining assertion is errored at once ("adapter hung") instead
//! of each waiting out the timeout (one timeout per assertion before).
use crate::common::*;

#[test]
fn a_hung_adapter_costs_two_timeouts_not_one_per_assertion() {
    let run = conform(&[
        "--impl",
        &adapter("--misbehave hang:*"),
        "--format",
        "json",
        "--timeout",
        "2",
        "--level",
        "extended",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let s = run.summary();
    let n = assertion_names().len() as u64;
    assert_eq!((s["errored"].as_u64(), s["passed"].as_u64(), s["failed"].as_u64()), (Some(n), Some(0), Some(0)), "{s}");
    let msgs: Vec<String> = run.outcomes().into_values().map(|(_, m)| m).collect();
    let timed_out = msgs.iter().filter(|m| m.contains("within 2.0s") && !m.contains("adapter hung")).count();
    let hung = msgs.iter().filter(|m| m.contains("adapter hung") && m.contains("did not answer either")).count();
    assert_eq!((timed_out, hung as u64), (1, n - 1), "{msgs:#?}");
    // one timeout in an assertion, one in the probe, plus start-ups
    assert!(run.wall.as_secs_f64() < 12.0, "took {:?}", run.wall);
    eprintln!("wall {:?}", run.wall);
}
