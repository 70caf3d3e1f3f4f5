//! Side effects recorded once, and activity digests (stall detection).

use super::Runner;
use crate::error::{Error, Result};
use crate::json;
use crate::lease::Lease;
use crate::store::Progress;
use serde_json::Value;

impl Runner {
    /// Record a side effect; first write wins (`false` if already present).
    pub fn record_effect(&self, lease: &Lease, step_id: &str, result: &Value) -> Result<bool> {
        let hid = lease.hid().as_str();
        if step_id.is_empty() {
            return Err(Error::validation("step_id must be a non-empty string"));
        }
        let text = json::dumps_sorted(result)?;
        if text.len() > self.cfg.max_checkpoint_bytes {
            return Err(Error::Oversize {
                what: "effect result",
                size: text.len(),
                limit: self.cfg.max_checkpoint_bytes,
            });
        }
        self.write_owned(lease, |tx| {
            let t = self.now_in(tx)?;
            tx.insert_effect(hid, step_id, &text, t)
        })
    }

    /// The recorded result of `step_id`, if it already ran.
    pub fn effect_done(&self, lease: &Lease, step_id: &str) -> Result<Option<Value>> {
        let hid = lease.hid().as_str();
        self.read(|tx| {
            self.check_owner(tx, lease)?.read_only();
            tx.effect(hid, step_id)?.map(|t| json::parse(&t)).transpose()
        })
    }

    /// Report an activity digest; returns how many times in a row it repeated.
    pub fn note_activity(&self, lease: &Lease, digest: &str) -> Result<i64> {
        let hid = lease.hid().as_str();
        self.write_owned(lease, |tx| {
            let t = self.now_in(tx)?;
            let p = tx.progress(hid)?;
            let count = match &p {
                Some(p) if p.last_digest.as_deref() == Some(digest) => p.digest_repeat_count + 1,
                _ => 1,
            };
            let last_checkpoint_at = p.and_then(|p| p.last_checkpoint_at);
            tx.put_progress(
                hid,
                &Progress { last_checkpoint_at, last_digest: Some(digest.to_string()), digest_repeat_count: count },
                t,
            )?;
            Ok(count)
        })
    }
}
