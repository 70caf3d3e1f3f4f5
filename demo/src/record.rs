//! One fetched page as the worker checkpoints it and as the dataset (CSV)
//! lists it.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// Task kind of the demo's handoff.
pub const KIND: &str = "wiki.fetch";

/// A fetched page. Field order is the CSV column order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageRecord {
    /// 0-based position in the task's title list.
    pub index: u64,
    pub title: String,
    /// The URL actually fetched.
    pub url: String,
    /// Length of the response body.
    pub bytes: u64,
    /// sha256 of the response body, lowercase hex.
    pub sha256: String,
    /// Worker id that fetched it.
    pub fetched_by: String,
    /// Host label of that worker (A or B).
    pub host: String,
    /// 1-based run of the handoff that fetched it.
    pub attempt: u64,
    /// Process id of that worker.
    pub pid: u32,
    pub http_status: u16,
    pub elapsed_ms: u64,
    /// ISO-8601 UTC time the fetch finished.
    pub fetched_at: String,
}

/// The CSV header line the dataset starts with.
pub const CSV_COLUMNS: &[&str] = &[
    "index",
    "title",
    "url",
    "bytes",
    "sha256",
    "fetched_by",
    "host",
    "attempt",
    "pid",
    "http_status",
    "elapsed_ms",
    "fetched_at",
];

/// Write the dataset atomically (temp file + rename), return its sha256.
pub fn write_csv(path: &Path, records: &[PageRecord]) -> anyhow::Result<String> {
    use sha2::{Digest, Sha256};
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in records {
        w.serialize(r)?;
    }
    let data = w.into_inner().map_err(|e| anyhow::anyhow!("csv: {e}"))?;
    let tmp = path.with_extension("csv.tmp");
    std::fs::write(&tmp, &data)?;
    std::fs::File::open(&tmp)?.sync_all()?;
    std::fs::rename(&tmp, path)?;
    Ok(hex::encode(Sha256::digest(&data)))
}

/// Read a dataset back (header checked).
pub fn read_csv(path: &Path) -> anyhow::Result<Vec<PageRecord>> {
    let mut r = csv::Reader::from_path(path)?;
    let header: Vec<String> = r.headers()?.iter().map(str::to_string).collect();
    anyhow::ensure!(header == CSV_COLUMNS, "unexpected CSV header {header:?}");
    let mut out = Vec::new();
    for row in r.deserialize() {
        out.push(row?);
    }
    Ok(out)
}
