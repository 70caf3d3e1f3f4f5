//! Helpers of dhp's integration tests: the `dhp` binary, and the ones
//! shared with dhp-core's tests (`dhp_testkit::helpers`).
#![allow(dead_code)]

pub use dhp_testkit::helpers::*;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

pub fn dhp_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_dhp"))
}

/// Run `dhp ARGS --json`; returns (exit code, stdout JSON, stderr).
pub fn dhp(args: &[&str], env: &[(&str, &str)]) -> (i32, Value, String) {
    let out = Command::new(dhp_bin()).args(args).arg("--json").envs(env.iter().copied()).output().expect("run dhp");
    parse_out(out)
}
