//! An adapter that answers with a 1 GiB line: the runner stops reading at
//! its 16 MiB line limit, errors the assertion with that reason, and its
//! own memory stays small (before the limit it buffered the whole line).
use crate::common::*;

#[test]
fn a_1_gib_reply_line_is_errored_and_not_buffered() {
    let (run, peak_kib) = conform_peak_rss(&[
        "--impl",
        &adapter("--misbehave huge-line:suspend"),
        "--format",
        "json",
        "--timeout",
        "20",
        "--level",
        "core",
        "no-runner-lock-in",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let outcomes = run.outcomes();
    let (outcome, msg) = outcomes.values().next().expect("one result");
    assert_eq!(outcome, "errored", "{msg}");
    assert!(msg.contains("longer than 16 MiB"), "{msg}");
    // The line limit plus the runner itself; a runner that buffers the line needs over 1 GiB.
    assert!(peak_kib < 120 * 1024, "runner peak RSS {peak_kib} KiB");
    assert!(run.wall.as_secs_f64() < 20.0, "took {:?}", run.wall);
    eprintln!("runner peak RSS {} MiB, wall {:?}", peak_kib / 1024, run.wall);
}
