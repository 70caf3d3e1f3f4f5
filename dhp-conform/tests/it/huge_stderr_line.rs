//! An adapter that prints a 256 MiB line on stderr and then answers
//! properly: the runner keeps only the start of each stderr line, so its
//! memory stays small and the assertion passes.
use crate::common::*;

#[test]
fn a_huge_stderr_line_is_cut_not_buffered() {
    let (run, peak_kib) = conform_peak_rss(&[
        "--impl",
        &adapter("--misbehave huge-stderr:suspend"),
        "--format",
        "json",
        "--level",
        "core",
        "no-runner-lock-in",
    ]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(peak_kib < 120 * 1024, "runner peak RSS {peak_kib} KiB");
    eprintln!("runner peak RSS {} MiB, wall {:?}", peak_kib / 1024, run.wall);
}
