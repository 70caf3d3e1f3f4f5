//! Helpers shared by the checker tests.
#![allow(dead_code)]

pub mod synth;

use serde_json::Value;
use std::path::{Path, PathBuf};

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
