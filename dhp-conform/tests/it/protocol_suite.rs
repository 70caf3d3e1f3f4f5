//! The conformance suite as one test: ours at every single-implementation
//! level plus the cross level with the reference both ways. This is the
//! test `scripts/mutation_score.sh` gives cargo-mutants, so that a mutant
//! of dhp-core counts as caught only if the conformance suite catches it.
//! The failing assertion ids are printed on one line (`FAILED-ASSERTIONS:`)
//! for the score's per-assertion accounting.
use crate::common::*;

#[test]
fn ours_passes_the_whole_suite() {
    let run = conform(&["--impl", "ours", "--cross", "reference", "--format", "json"]);
    let bad: Vec<String> = run
        .outcomes()
        .into_iter()
        .filter(|(_, (o, _))| o != "passed" && o != "skipped")
        .map(|((imp, a), (o, m))| format!("{a} [{imp}] {o}: {m}"))
        .collect();
    let ids: Vec<String> =
        run.outcomes().into_iter().filter(|(_, (o, _))| o == "failed" || o == "errored").map(|((_, a), _)| a).collect();
    eprintln!("FAILED-ASSERTIONS: {}", ids.join(","));
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.summary()["skipped"], 0, "ours declares every feature");
    eprintln!("suite: {:.1}s", run.wall.as_secs_f64());
}
