//! An adapter that cannot start (missing program, garbage or silence at
//! the handshake, a crash on import): one clear error on stderr, exit 2,
//! nothing run — not the same error once per assertion.
use crate::common::*;

fn dead_on_arrival(cmd: &str, cause: &str) -> Run {
    let run = conform(&["--impl", cmd, "--format", "json", "--timeout", "1"]);
    assert_eq!(run.code, 2, "{cmd}: {}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.trim().is_empty(), "{cmd}: nothing runs, no summary: {}", run.stdout);
    let errors: Vec<&str> = run.stderr.lines().filter(|l| l.contains("did not start")).collect();
    assert_eq!(errors.len(), 1, "{cmd}: {}", run.stderr);
    assert!(errors[0].contains(cause), "{cmd}: {:?} should say {cause:?}", errors[0]);
    assert!(run.wall.as_secs_f64() < 10.0, "{cmd}: took {:?}", run.wall);
    run
}

#[test]
fn garbage_at_handshake() {
    dead_on_arrival("sh -c 'echo hello there; sleep 30'", "not a JSON reply");
}

#[test]
fn missing_program() {
    dead_on_arrival("/nonexistent/dhp-adapter", "adapter exited");
}

#[test]
fn silent_at_handshake() {
    dead_on_arrival("sleep 30", "did not answer hello within 1.0s");
}

#[test]
fn a_traceback_at_start_up_is_shown_once() {
    // (spelled so that the command line itself does not contain the word)
    let run = dead_on_arrival(
        "sh -c 'x=Import; echo \"Traceback: ${x}Error: no module named dhp\" >&2; exit 1'",
        "adapter exited",
    );
    assert_eq!(run.stderr.matches("ImportError").count(), 1, "{}", run.stderr);
}
