//! Helpers shared by dhp-core's and dhp's integration tests: the reference
//! through refctl, Python snippets, store dumps, races and waits.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// An exit code, the last stdout line as JSON, and stderr.
pub fn parse_out(out: Output) -> (i32, Value, String) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v = stdout.lines().last().and_then(|l| serde_json::from_str(l).ok()).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), v, String::from_utf8_lossy(&out.stderr).into_owned())
}

pub fn refctl_path() -> PathBuf {
    crate::checkout().join("scripts/pyref/refctl.py")
}

/// Run the reference through refctl; returns (exit code, JSON reply).
pub fn refctl(args: &[&str], env: &[(&str, &str)]) -> (i32, Value) {
    let out = Command::new(crate::python())
        .arg(refctl_path())
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run refctl");
    let (code, v, err) = parse_out(out);
    if v.is_null() {
        panic!("refctl {args:?} printed no JSON (exit {code}): {err}");
    }
    (code, v)
}

/// refctl that must succeed.
pub fn refctl_ok(args: &[&str], env: &[(&str, &str)]) -> Value {
    let (code, v) = refctl(args, env);
    assert!(code == 0 && v["ok"] == true, "refctl {args:?} failed: {v}");
    v
}

/// Run a snippet of Python with the reference importable.
pub fn python(code: &str) -> String {
    let out = Command::new(crate::python()).arg("-c").arg(code).output().expect("run python");
    assert!(out.status.success(), "python failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every row of every table, as text: two dumps are equal iff the store
/// did not change.
pub fn dump(root: &Path) -> String {
    let c = rusqlite::Connection::open(root.join("dhp.sqlite3")).unwrap();
    let mut out = String::new();
    for t in [
        "schema_version",
        "handoffs",
        "checkpoints",
        "ownership",
        "leadership",
        "effects",
        "approvals",
        "progress",
        "capability_audit",
    ] {
        let mut st = c.prepare(&format!("SELECT * FROM {t} ORDER BY 1, 2")).unwrap();
        let n = st.column_count();
        let rows = st
            .query_map([], |r| Ok((0..n).map(|i| format!("{:?}", r.get_ref(i).unwrap())).collect::<Vec<_>>().join("|")))
            .unwrap();
        for r in rows {
            out.push_str(&format!("{t}: {}\n", r.unwrap()));
        }
    }
    out
}

pub const SCHEMA_X: &str = r#"{"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}"#;

/// Short leases so that lease expiry happens within a test.
pub const SHORT: &[(&str, &str)] = &[
    ("DHP_LEASE_INTERVAL_S", "0.3"),
    ("DHP_LEASE_MAX_MISSED", "2"),
    ("DHP_SUPERVISOR_SCAN_S", "0.1"),
    ("DHP_LEADER_TTL_S", "1.0"),
];

/// Start a race: wait until every racer process has said it is ready
/// (`ready(i)` exists), then create `barrier`, which they wait for. A racer
/// that exits before it is ready, or a timeout, fails the test, after the
/// barrier is created so that the others do not wait for it forever.
pub fn start_race(
    children: &mut [std::process::Child],
    ready: impl Fn(usize) -> std::path::PathBuf,
    barrier: &Path,
    secs: f64,
) {
    let end = std::time::Instant::now() + std::time::Duration::from_secs_f64(secs);
    let failure = loop {
        if (0..children.len()).all(|i| ready(i).exists()) {
            break None;
        }
        if let Some(i) = children.iter_mut().position(|c| c.try_wait().ok().flatten().is_some()) {
            break Some(format!("racer {i} exited before it was ready"));
        }
        if std::time::Instant::now() > end {
            break Some(format!("not every racer ready within {secs} s"));
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    std::fs::write(barrier, b"").unwrap();
    if let Some(why) = failure {
        panic!("{why}");
    }
}

/// Wait until the supervisor that records its history in `history` as
/// `process` (`dhp supervisor ROOT process S --history FILE`) has finished
/// `n` more passes: it writes one `scan` line at the end of each, leader or
/// follower. After two, at least one whole pass ran after this call began.
/// (Not leadership renewals: a leader renews only every few passes.)
pub fn wait_for_passes(history: &Path, process: &str, n: usize, secs: f64) {
    let passes = || {
        std::fs::read_to_string(history)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["op"] == "scan" && v["process"] == process)
            .count()
    };
    let base = passes();
    crate::wait_until(std::time::Duration::from_secs_f64(secs), &format!("{n} more passes of {process}"), || {
        passes() >= base + n
    });
}

/// Whether process `pid` is stopped (SIGSTOP `T`, or traced `t`), from
/// `/proc/PID/stat` (the state follows the command's closing parenthesis).
pub fn stopped(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, r)| r.trim_start().starts_with(['T', 't'])))
        .unwrap_or(false)
}
