//! Shared helpers of the `cli_*` tests: run the real `dhp` binary and check
//! the documented failure format (`dhp: <Kind>: <message>`, one line).
#![allow(dead_code)]

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_dhp"))
}

/// One finished `dhp` run.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The last stdout line as JSON (what `--json` prints).
    pub fn json(&self) -> Value {
        self.stdout.lines().last().and_then(|l| serde_json::from_str(l).ok()).unwrap_or(Value::Null)
    }
}

/// Run `dhp ARGS` with extra environment, no `--json` added.
pub fn run(args: &[&str], env: &[(&str, &str)]) -> Run {
    let out = Command::new(bin()).args(args).env_remove("DHP_LOG").envs(env.iter().copied()).output().expect("run dhp");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The run failed with `code` and one stderr line `dhp: <kind>: …`,
/// without a panic or colour codes. Returns the message.
pub fn failed(r: &Run, code: i32, kind: &str) -> String {
    assert_eq!(r.code, code, "exit code of {r:?}");
    assert_eq!(r.stderr.trim_end().lines().count(), 1, "one stderr line: {r:?}");
    assert!(!r.stderr.contains('\x1b') && !r.stderr.contains("panicked"), "{r:?}");
    let prefix = format!("dhp: {kind}: ");
    assert!(r.stderr.starts_with(&prefix), "want {prefix:?}: {r:?}");
    r.stderr.trim_end()[prefix.len()..].to_string()
}

/// Like [`failed`], for a run with `--json`: stdout is the error object.
pub fn failed_json(r: &Run, code: i32, kind: &str) -> String {
    let msg = failed(r, code, kind);
    let v = r.json();
    assert_eq!((v["ok"].clone(), v["error_kind"].clone()), (json!(false), json!(kind)), "{r:?}");
    assert_eq!(v["error"].as_str(), Some(msg.as_str()));
    msg
}

/// A store at `dir/store` with one pending census handoff (made through
/// the library, so the fixture does not depend on the CLI under test);
/// returns (root, hid).
pub fn store_with_census(dir: &Path) -> (PathBuf, String) {
    use dhp_core::envelope::{self, Budget, BuildOptions};
    use dhp_core::{Config, Runner};
    use dhp_workload::census;
    let root = dir.join("store");
    let budget = Budget { max_steps: 110, max_spend_usd: 500.0, max_wallclock_s: 5400.0, max_attempts: 25 };
    let env = envelope::build(
        census::KIND,
        census::inputs(1000, 2000, 100),
        census::output_schema(),
        BuildOptions { budget: Some(budget.to_value()), ..Default::default() },
    )
    .expect("census envelope");
    let hid = Runner::open(&root, "fixture", Config::default()).expect("store").dispatch(&env).expect("dispatch");
    (root, hid)
}

/// Every file under `dir`, with its size: equal listings mean nothing was
/// created, removed or resized.
pub fn listing(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            let len = e.metadata().map(|m| m.len()).unwrap_or(0);
            if p.is_dir() {
                stack.push(p.clone());
                out.push((p, 0));
            } else {
                out.push((p, len));
            }
        }
    }
    out.sort();
    out
}
