//! A reader that went away is not a crash: `dhp status ROOT | head -1`
//! closes the pipe before `dhp` writes, and `println!` used to panic on the
//! EPIPE (exit 101, "failed printing to stdout"). Now the outcome stands:
//! exit 0 with nothing on stderr, or the failure's own code. A full disk
//! behind stdout is still an error (IoError, exit 11).
use crate::cli_support::*;
use std::process::{Command, Stdio};

/// A pipe whose read end is already closed: every write to it is EPIPE.
fn dead_pipe() -> Stdio {
    let (r, w) = nix::unistd::pipe().expect("pipe");
    drop(r);
    Stdio::from(w)
}

/// Run `dhp ARGS` with stdout (and optionally stderr) on a closed pipe;
/// returns (exit code, stderr).
fn run_into_dead_pipe(args: &[&str], stderr_too: bool) -> (i32, String) {
    let mut cmd = Command::new(bin());
    cmd.args(args).env_remove("DHP_LOG").stdout(dead_pipe());
    if stderr_too {
        cmd.stderr(dead_pipe());
    } else {
        cmd.stderr(Stdio::piped());
    }
    let out = cmd.output().expect("run dhp");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_closed_stdout_keeps_the_outcome_and_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let (root, hid) = store_with_census(dir.path());
    let r = root.to_str().unwrap();
    // Success: exit 0, nothing on stderr, text or JSON alike.
    for args in [vec!["status", r], vec!["status", r, &hid], vec!["--json", "status", r]] {
        let (code, err) = run_into_dead_pipe(&args, false);
        assert_eq!((code, err.as_str()), (0, ""), "{args:?}");
    }
    // A failure keeps its code and its stderr line (the JSON copy on stdout
    // is lost with the pipe).
    let gone = dir.path().join("no-store");
    let g = gone.to_str().unwrap();
    let (code, err) = run_into_dead_pipe(&["--json", "status", g], false);
    assert_eq!(code, 11, "{err}");
    assert!(err.starts_with("dhp: StoreError: ") && !err.contains("panicked"), "{err}");
    // Both streams closed: still the outcome's code, no panic (101).
    assert_eq!(run_into_dead_pipe(&["status", r], true).0, 0);
    assert_eq!(run_into_dead_pipe(&["--json", "status", g], true).0, 11);
}

#[test]
fn a_full_disk_behind_stdout_is_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let (root, _) = store_with_census(dir.path());
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    let out = Command::new(bin())
        .args(["status", root.to_str().unwrap()])
        .env_remove("DHP_LOG")
        .stdout(full)
        .output()
        .expect("run dhp");
    let r = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::new(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    let msg = failed(&r, 11, "IoError");
    assert!(msg.contains("cannot write to stdout"), "{msg}");
}
