//! The `hello` result: who the implementation is and what it declares.

use dhp_adapter_proto::{Op, Response};
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
    /// From a `hello` result; `None` when it is not one.
    pub(super) fn from_result(v: Value) -> Option<Hello> {
        match Response::from_result(Op::Hello, v) {
            Ok(Response::Hello(h)) => Some(Hello {
                implementation: h.implementation,
                version: h.version,
                protocol_version: h.protocol_version,
                features: h.features.into_iter().collect(),
                pid: h.pid,
            }),
            _ => None,
        }
    }

    /// Whether the adapter declares `feature`.
    pub fn has(&self, feature: &str) -> bool {
        self.features.contains(feature)
    }
}
