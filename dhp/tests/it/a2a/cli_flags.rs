//! `dhp a2a` refuses bad flags (exit 2) and a ROOT without a store (exit
//! 11) before it listens, with the one-line error format.

use crate::a2a_support;
use crate::a2a_support::dhp_bin;
use std::process::Command;

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(dhp_bin()).arg("a2a").args(args).env("DHP_A2A_TOKEN", "t0k").output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn bad_flags_and_missing_store_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = a2a_support::new_store(dir.path());
    let r = root.to_str().unwrap();
    for (args, needle) in [
        (vec!["--root", r, "--max-body", "0"], "--max-body"),
        (vec!["--root", r, "--max-body", "999999999999"], "--max-body"),
        (vec!["--root", r, "--workers", "65"], "--workers"),
        (vec!["--root", r, "--block-timeout", "0"], "--block-timeout"),
        (vec!["--root", r, "--block-timeout", "nan"], "--block-timeout"),
        (vec!["--root", r, "--worker-pace=-1"], "--worker-pace"),
        (vec!["--root", r, "--id", "__orphaned__"], "reserved"),
        (vec!["--root", r, "--port", "70000"], "--port"),
        (vec!["--root", r, "--host", "not a host"], "cannot listen"),
        (vec!["--root", r, "--max-connections", "0"], "--max-connections"),
        (vec!["--root", r, "--max-connections", "65537"], "--max-connections"),
        (vec!["--root", r, "--header-timeout", "0"], "--header-timeout"),
        (vec!["--root", r, "--header-timeout", "inf"], "--header-timeout"),
        (vec!["--root", r, "--allow-host", "evil.example:80"], "--allow-host"),
        (vec!["--root", r, "--insecure-no-token"], "--insecure-no-token"),
    ] {
        let (code, err) = run(&args);
        assert!(
            code == 2 || (needle == "cannot listen" && code == 10) || (needle == "reserved" && code == 3),
            "{args:?}: exit {code}: {err}"
        );
        assert!(err.starts_with("dhp: ") && err.contains(needle), "{args:?}: {err}");
    }
    let (code, err) = run(&["--root", dir.path().join("nothing-here").to_str().unwrap()]);
    assert_eq!(code, 11, "{err}");
}
