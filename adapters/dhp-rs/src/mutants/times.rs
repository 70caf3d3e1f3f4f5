//! timestamps-unix-seconds: the envelope's `provenance.created_at` is
//! written as Unix seconds (`"1764500000.123456"`) instead of Python's
//! isoformat() UTC text; the handoff id is computed over it as usual, so
//! the envelope is otherwise valid.

use super::{Mutant, MutantAdapter};
use crate::adapter::{self, R};
use dhp_adapter_proto::Op;
use serde_json::Value;

pub(super) fn handle(ad: &mut MutantAdapter, op: Op, a: &Value) -> Option<R> {
    let clock = ad.inner.cfg.clock.clone();
    match (ad.m, op) {
        (Mutant::TimestampsUnixSeconds, Op::BuildEnvelope) => {
            let spec = serde_json::from_value(a.clone()).map_err(|e| adapter::bad(format!("build_envelope: {e}")));
            Some(spec.and_then(|spec| adapter::build_envelope(&spec, Some(format!("{:.6}", clock.now())))))
        }
        _ => None,
    }
}
