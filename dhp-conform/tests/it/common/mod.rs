//! Running the `dhp-conform` binary from tests.
#![allow(dead_code)]

pub mod mutants;

use serde_json::Value;
use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

/// What one run of the runner produced.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub wall: Duration,
}

impl Run {
    /// The `--format json` summary (the last stdout line).
    pub fn summary(&self) -> Value {
        let last = self.stdout.lines().last().unwrap_or("");
        let v: Value = serde_json::from_str(last)
            .unwrap_or_else(|e| panic!("last line is not the JSON summary ({e}):\n{}\n{}", self.stdout, self.stderr));
        assert_eq!(v["type"], "dhp-conform", "{v}");
        v
    }

    /// `(implementation, assertion) -> (outcome, message)`.
    pub fn outcomes(&self) -> BTreeMap<(String, String), (String, String)> {
        self.summary()["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|r| {
                (
                    (r["implementation"].as_str().unwrap().to_string(), r["assertion"].as_str().unwrap().to_string()),
                    (r["outcome"].as_str().unwrap().to_string(), r["message"].as_str().unwrap_or("").to_string()),
                )
            })
            .collect()
    }

    /// Assertion names with the given outcome (any implementation).
    pub fn with_outcome(&self, outcome: &str) -> Vec<String> {
        self.outcomes().into_iter().filter(|(_, (o, _))| o == outcome).map(|((_, a), _)| a).collect()
    }
}

/// The Python reference must be present: interop tests never skip.
pub fn python() -> String {
    dhp_testkit::python().to_string_lossy().into_owned()
}

/// Run `dhp-conform` with `args`.
pub fn conform(args: &[&str]) -> Run {
    let start = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_dhp-conform"))
        .args(args)
        .env("DHP_PYTHON", python())
        .output()
        .expect("running dhp-conform");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        wall: start.elapsed(),
    }
}

/// Our adapter, with extra arguments (a misbehaviour).
pub fn adapter(extra: &str) -> String {
    format!("'{}' {extra}", crate::common::adapter_bin())
}

/// Our adapter with the mutant `name` (one guarantee removed), with extra
/// arguments.
pub fn mutant_adapter(name: &str, extra: &str) -> String {
    format!("'{}' --mutant {name} {extra}", crate::common::mutant_adapter_bin())
}

/// The catalogue, from `--list --format json`.
pub fn catalogue(level: &str) -> Vec<Value> {
    let run = conform(&["--list", "--format", "json", "--level", level]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout));
    assert_eq!(v["type"], "dhp-conform-catalogue");
    v["assertions"].as_array().expect("assertions").clone()
}

/// Every single-implementation assertion id, from the catalogue.
pub fn assertion_names() -> Vec<String> {
    catalogue("extended").iter().map(|a| a["id"].as_str().unwrap().to_string()).collect()
}

/// Run `dhp-conform` with `args`, sampling its peak RSS (`VmHWM`, KiB)
/// until it exits.
pub fn conform_peak_rss(args: &[&str]) -> (Run, u64) {
    let start = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_dhp-conform"))
        .args(args)
        .env("DHP_PYTHON", python())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("running dhp-conform");
    let status_file = format!("/proc/{}/status", child.id());
    let sampler = std::thread::spawn(move || {
        let mut peak = 0u64;
        // until the process is gone (or a zombie: no VmHWM line any more)
        while let Ok(text) = std::fs::read_to_string(&status_file) {
            let Some(kb) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            else {
                break;
            };
            peak = peak.max(kb);
            std::thread::sleep(Duration::from_millis(5));
        }
        peak
    });
    let out = child.wait_with_output().expect("waiting for dhp-conform");
    let peak = sampler.join().expect("sampler");
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        wall: start.elapsed(),
    };
    (run, peak)
}

/// Is `pid` a live (not zombie) process?
#[allow(unused_imports)] // each test binary uses its own part of `common`
pub use dhp_testkit::alive;

/// dhp-rs's adapter (adapters/dhp-rs: the implementation under test lives
/// outside the judge, so it is not one of this package's programs).
pub fn adapter_bin() -> &'static str {
    static P: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    P.get_or_init(|| dhp_testkit::workspace_bin("dhp-adapter", "dhp-adapter").to_string_lossy().into_owned())
}

/// dhp-rs's adapter with one guarantee removed (`--mutant NAME`).
pub fn mutant_adapter_bin() -> &'static str {
    static P: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    P.get_or_init(|| dhp_testkit::workspace_bin("dhp-adapter", "dhp-mutant-adapter").to_string_lossy().into_owned())
}
