//! The `hello` result: who the implementation is and what it declares.

use serde_json::Value;
use std::collections::BTreeSet;

/// The `hello` result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hello {
    /// The implementation's name (`dhp-rs`, `dhp-protocol`, …).
    pub implementation: String,
    /// Its version.
    pub version: String,
    /// The adapter protocol version it speaks.
    pub protocol_version: String,
    /// Optional features it declares (assertions needing others skip).
    pub features: BTreeSet<String>,
    /// The adapter's process id, when it reports one.
    pub pid: Option<u64>,
}

impl Hello {
    pub(super) fn from_result(v: &Value) -> Hello {
        let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
        Hello {
            implementation: s("implementation"),
            version: s("version"),
            protocol_version: s("protocol_version"),
            features: v["features"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|f| f.as_str().map(String::from))
                .collect(),
            pid: v["pid"].as_u64(),
        }
    }

    /// Whether the adapter declares `feature`.
    pub fn has(&self, feature: &str) -> bool {
        self.features.contains(feature)
    }
}
