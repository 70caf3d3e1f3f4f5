//! Shared helpers of the mcp_* tests: server command lines and the Python
//! MCP client driver (tests/py/mcp_session.py).
#![allow(dead_code)]

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Our server: `dhp mcp --root ROOT`.
pub fn ours(root: &Path) -> Vec<String> {
    vec![env!("CARGO_BIN_EXE_dhp").into(), "mcp".into(), "--root".into(), root.display().to_string()]
}

/// Our server for the deciding side: `dhp mcp --root ROOT --decider`.
pub fn ours_decider(root: &Path) -> Vec<String> {
    let mut v = ours(root);
    v.push("--decider".into());
    v
}

/// The reference's server (`dhp-mcp --root ROOT`, i.e. `dhp.mcp_server`).
/// The store is created first, by the reference, in this process: two of
/// its servers started at once on a fresh root (a session and its decider)
/// race to create it, and one is refused with `database is locked`
/// (PROTOCOL §13.16; failed a CI run once).
pub fn reference(root: &Path) -> Vec<String> {
    let made = Command::new(dhp_testkit::python())
        .args(["-c", "import sys, dhp; dhp.Store(sys.argv[1])"])
        .arg(root)
        .output()
        .expect("run python");
    assert!(
        made.status.success(),
        "the reference could not create its store: {}",
        String::from_utf8_lossy(&made.stderr)
    );
    vec![
        dhp_testkit::python().display().to_string(),
        "-m".into(),
        "dhp.mcp_server".into(),
        "--root".into(),
        root.display().to_string(),
    ]
}

/// Wrap a server command so it writes its pid to `pidfile` first (the
/// test kills it by pid; the Python client does not expose it).
pub fn with_pidfile(pidfile: &Path, cmd: &[String]) -> Vec<String> {
    let mut v =
        vec!["/bin/sh".into(), "-c".into(), format!("echo $$ > '{}'; exec \"$@\"", pidfile.display()), "sh".into()];
    v.extend(cmd.iter().cloned());
    v
}

/// Run tests/py/mcp_session.py with `args`; its stdout JSON. Fails loudly
/// (with the fix) when the `mcp` package is missing: tests never skip.
pub fn py_session(args: &[String], env: &[(&str, &str)]) -> Value {
    let py = dhp_testkit::python();
    let probe = Command::new(&py).args(["-c", "import mcp.client.stdio"]).output().expect("run python");
    assert!(
        probe.status.success(),
        "the Python `mcp` package is missing from {}: run scripts/setup.sh ({})",
        py.display(),
        String::from_utf8_lossy(&probe.stderr)
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/mcp_session.py");
    let out = Command::new(&py).arg(script).args(args).envs(env.iter().copied()).output().expect("run mcp_session.py");
    assert!(out.status.success(), "mcp_session.py {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("mcp_session.py printed no JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// The steps of a session reply, by label.
pub fn step<'a>(session: &'a Value, label: &str) -> &'a Value {
    session["steps"]
        .as_array()
        .and_then(|s| s.iter().find(|e| e["label"] == label))
        .unwrap_or_else(|| panic!("no step {label:?} in {session}"))
}
