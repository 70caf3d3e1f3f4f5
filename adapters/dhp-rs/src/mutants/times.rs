//! timestamps-unix-seconds: the envelope's `provenance.created_at` is
//! written as Unix seconds (`"1764500000.123456"`) instead of Python's
//! isoformat() UTC text; the handoff id is computed over it as usual, so
//! the envelope is otherwise valid.

use super::{Mutant, MutantAdapter};
use crate::adapter::{self, R};
use serde_json::Value;

pub(super) fn handle(ad: &mut MutantAdapter, op: &str, a: &Value) -> Option<R> {
    let clock = ad.inner.cfg.clock.clone();
    match (ad.m, op) {
        (Mutant::TimestampsUnixSeconds, "build_envelope") => {
            Some(adapter::build_envelope(a, Some(format!("{:.6}", clock.now()))))
        }
        _ => None,
    }
}
