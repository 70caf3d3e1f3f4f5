//! Helpers shared by the dhp-chaos integration tests.
#![allow(dead_code)]

pub mod bins;
mod db_mutant;
mod declared;
pub mod hosts;
#[allow(unused_imports)]
pub use db_mutant::*;
pub use declared::*;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn chaos_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_dhp-chaos"))
}

/// A mutant program of adapters/dhp-rs-chaos (`mutant-worker`,
/// `mutant-supervisor`, `mutant-transport`, `mutant-shipper`):
/// `target/<profile>/NAME`, built with cargo (dhp-kit) — the judge's
/// package does not hold the implementations it judges.
pub fn mutant(name: &str) -> PathBuf {
    dhp_kit::workspace_bin("dhp-chaos-mutants", name)
}

pub fn mutant_bin() -> PathBuf {
    mutant("mutant-worker")
}

/// `target/<profile>/dhp`, built once per test process (dhp-kit).
pub fn dhp_bin() -> PathBuf {
    dhp_kit::dhp_bin()
}

/// The reference venv's interpreter (dhp-kit: made by scripts/setup.sh
/// when missing; a test fails when it cannot be made, it never skips).
pub fn python() -> PathBuf {
    dhp_kit::python()
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub out: PathBuf,
    pub results: Value,
}

/// The run directory goes with the run once the test is done with it; a
/// failing test (panicking) keeps it, for a look at what happened.
impl Drop for Run {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("run directory kept: {}", self.out.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.out);
        }
    }
}

impl Run {
    pub fn totals(&self) -> &Value {
        &self.results["totals"]
    }
    /// Violations (unexplained) of one invariant, over all rounds.
    pub fn violations(&self, inv: &str) -> Vec<String> {
        self.invariant_list(inv, "violations")
    }
    pub fn known(&self, inv: &str) -> Vec<String> {
        self.invariant_list(inv, "known")
    }
    fn invariant_list(&self, inv: &str, field: &str) -> Vec<String> {
        let mut out = Vec::new();
        for r in self.results["rounds"].as_array().into_iter().flatten() {
            for i in r["invariants"].as_array().into_iter().flatten() {
                if i["name"] == inv {
                    out.extend(i[field].as_array().into_iter().flatten().filter_map(|v| v.as_str().map(String::from)));
                }
            }
        }
        out
    }
    pub fn checked(&self, inv: &str) -> u64 {
        self.totals()["invariants"][inv]["checked"].as_u64().unwrap_or(0)
    }
    pub fn dump(&self) -> String {
        format!("exit {}\n--- stdout\n{}\n--- stderr\n{}", self.code, self.stdout, self.stderr)
    }
}

/// Run `dhp-chaos ARGS --out <tmp> --quiet --dhp <dhp>` and load results.json.
pub fn run_chaos(name: &str, args: &[&str]) -> Run {
    let out = std::env::temp_dir().join("dhp-chaos-tests").join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let dhp = dhp_bin();
    let o = Command::new(chaos_bin())
        .args(args)
        .arg("--out")
        .arg(&out)
        .arg("--quiet")
        .arg("--dhp")
        .arg(&dhp)
        .output()
        .expect("running dhp-chaos");
    let results = std::fs::read(out.join("results.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
        out,
        results,
    }
}

pub fn analyze(dir: &Path) -> (i32, String) {
    let o = Command::new(chaos_bin()).arg("analyze").arg(dir).output().expect("running dhp-chaos analyze");
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).into())
}

/// A history file's text preceded by the harness's own file beside it
/// (`harness.jsonl`: where the harness's `chaos` lines live).
pub fn history_text(p: &Path) -> std::io::Result<String> {
    let own = dhp_chaos::hist::harness_path(p);
    let mut text = match std::fs::read_to_string(&own) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    text.push_str(&std::fs::read_to_string(p)?);
    Ok(text)
}

/// A synthetic round's history, written the way a round writes it: the
/// harness's lines (process `chaos`) to `harness.jsonl`, every other line
/// to `history.jsonl`.
pub struct SplitHistory {
    theirs: std::fs::File,
    own: std::fs::File,
}

impl SplitHistory {
    pub fn open(dir: &Path) -> SplitHistory {
        let open = |p: PathBuf| std::fs::OpenOptions::new().create(true).append(true).open(p).unwrap();
        let history = dir.join("history.jsonl");
        SplitHistory { own: open(dhp_chaos::hist::harness_path(&history)), theirs: open(history) }
    }

    /// Append one line to the file its `process` belongs in.
    pub fn write(&mut self, v: &Value) {
        use std::io::Write;
        let f = if v["process"] == "chaos" { &mut self.own } else { &mut self.theirs };
        writeln!(f, "{v}").unwrap();
    }
}
