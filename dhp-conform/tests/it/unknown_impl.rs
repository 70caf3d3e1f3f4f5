//! `--impl WORD` where WORD is neither `ours`, `reference` nor a program on
//! PATH is a usage error, reported before any adapter starts.
use crate::common::*;

#[test]
fn an_unknown_impl_word_is_a_usage_error_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pids");
    // a first, valid implementation that would leave a trace if it were started
    let first = adapter(&format!("--spawn-grandchild '{}'", pidfile.display()));
    let run = conform(&["--impl", &first, "--impl", "refrence", "--format", "json"]);
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("unknown implementation `refrence`"), "{}", run.stderr);
    assert!(run.stdout.trim().is_empty(), "{}", run.stdout);
    assert!(!pidfile.exists(), "an adapter was started before the usage error");
    assert!(run.wall.as_secs_f64() < 5.0, "took {:?}", run.wall);
}

#[test]
fn a_program_on_path_is_accepted_as_a_command() {
    // `true` is on PATH: accepted as a command; it then cannot shake hands
    let run = conform(&["--impl", "true", "--format", "json", "--timeout", "2"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(!run.stderr.contains("unknown implementation"), "{}", run.stderr);
    assert!(run.stderr.contains("did not start"), "{}", run.stderr);
}
