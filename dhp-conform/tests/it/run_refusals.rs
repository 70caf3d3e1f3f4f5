//! Mistakes on the command line are refused before anything runs, with
//! exit 2, and a run with failures exits 1 (documented), never 101 (a
//! panic's code).
use crate::common::*;

#[test]
fn a_filter_that_matches_no_assertion_exits_2() {
    let run = conform(&["fencnig"]);
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("\"fencnig\" matches no assertion"), "{}", run.stderr);
    assert!(!run.stdout.contains("test result"), "nothing may run:\n{}", run.stdout);
    let exact = conform(&["fencing-x", "--exact"]);
    assert_eq!(exact.code, 2, "{}", exact.stderr);
    assert!(exact.stderr.contains("(--exact)"), "{}", exact.stderr);
    // a filter that matches runs as before
    let one = conform(&["fencing", "--exact"]);
    assert_eq!(one.code, 0, "{}\n{}", one.stdout, one.stderr);
    assert!(one.stdout.contains("1 passed"), "{}", one.stdout);
}

#[test]
fn report_paths_that_cannot_be_written_are_refused_before_any_adapter_starts() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let missing = dir.path().join("no-such-dir/junit.xml");
    let under_file = file.join("html");
    // an adapter that cannot start: had the paths been checked after it,
    // the run would have stopped with "did not start" instead
    let dead = "/nonexistent/dhp-adapter";
    for (args, want) in [
        (vec!["--junit", missing.to_str().unwrap()], "--junit"),
        (vec!["--junit", dir.path().to_str().unwrap()], "is a directory"),
        (vec!["--html", under_file.to_str().unwrap()], "--html"),
        (vec!["--badge", under_file.to_str().unwrap()], "--badge"),
    ] {
        let mut all = vec!["--impl", dead];
        all.extend(args.iter().copied());
        let run = conform(&all);
        assert_eq!(run.code, 2, "{all:?}: {}", run.stderr);
        assert!(run.stderr.contains(want) && run.stderr.contains("nothing was run"), "{all:?}: {}", run.stderr);
        assert!(!run.stderr.contains("did not start"), "{all:?}: the adapter was started first: {}", run.stderr);
    }
    assert!(!dir.path().join("no-such-dir").exists(), "--junit's directory is not created");
}

#[test]
fn a_failing_run_exits_1() {
    let adapter = mutant_adapter("no-fence-check", "");
    let run = conform(&["--impl", adapter.as_str(), "fencing", "--exact"]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("1 failed"), "{}", run.stdout);
}
