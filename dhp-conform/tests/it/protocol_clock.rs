//! Feature `clock-control` (ADAPTERS.md §2, §3): the runner moves the
//! implementation's clock instead of sleeping. dhp-adapter declares it, so
//! the assertions that used to wait for a stall clock (3 s), a wall-clock
//! budget (2.6 s), a lease (1.2 s) or an approval timeout take a fraction
//! of that; the reference, which does not, still waits (conformance.rs,
//! expectations.rs), and `clock-offset-ignored` (mutants.rs) shows each of
//! them fails when the clock is declared but not moved.
use crate::common::*;

fn seconds_of(imp: &str, assertion: &str) -> f64 {
    let run = conform(&["--impl", imp, assertion, "--exact", "--format", "json"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let s = run.summary();
    let r = &s["results"][0];
    assert_eq!(r["outcome"], "passed", "{r}");
    r["seconds"].as_f64().unwrap()
}

#[test]
fn clock_bound_assertions_move_the_clock_instead_of_waiting() {
    let hello = std::process::Command::new(adapter_bin())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            let mut stdin = c.stdin.take().unwrap();
            writeln!(stdin, r#"{{"id": 1, "op": "hello", "args": {{"adapter_protocol": 1}}}}"#)?;
            drop(stdin);
            c.wait_with_output()
        })
        .unwrap();
    let reply: serde_json::Value = serde_json::from_slice(&hello.stdout).unwrap();
    assert!(reply["result"]["features"].as_array().unwrap().contains(&"clock-control".into()), "{reply}");
    // each waited at least this long in real time before (debug build, idle machine: 3.1, 2.7, 1.3 s)
    for (assertion, waited) in [("stall-by-age", 3.0), ("budget-kinds", 2.6), ("heartbeat-extends-lease", 1.2)] {
        let took = seconds_of("ours", assertion);
        assert!(took < waited - 0.5, "{assertion} took {took:.2} s: the runner waited instead of moving the clock");
    }
}

/// The fallback: the same adapter without the feature passes the same
/// assertions by waiting in real time.
#[test]
fn without_the_feature_the_runner_waits_in_real_time() {
    let imp = format!("{} --without-feature clock-control", adapter_bin());
    let took = seconds_of(&imp, "stall-by-age");
    assert!(took >= 3.0, "stall-by-age took {took:.2} s without clock-control: it must wait the 3 s out");
}
