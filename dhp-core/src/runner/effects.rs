//! Side effects recorded once, and activity digests (stall detection).

use super::Runner;
use crate::envelope::check_hid;
use crate::error::Error;
use crate::error::Result;
use crate::json;
use crate::store::Progress;
use serde_json::Value;

impl Runner {
    /// Record a side effect; first write wins (`false` if already present).
    pub fn record_effect(&self, hid: &str, fence: i64, step_id: &str, result: &Value) -> Result<bool> {
        check_hid(hid)?;
        if step_id.is_empty() {
            return Err(Error::Validation("step_id must be a non-empty string".into()));
        }
        let text = json::dumps_sorted(result)?;
        if text.len() > self.cfg.max_checkpoint_bytes {
            return Err(Error::Oversize {
                what: "effect result",
                size: text.len(),
                limit: self.cfg.max_checkpoint_bytes,
            });
        }
        self.write(|tx| {
            self.check_owner(tx, hid, fence)?;
            let t = tx.now()?;
            tx.insert_effect(hid, step_id, &text, t)
        })
    }

    /// The recorded result of `step_id`, if it already ran.
    pub fn effect_done(&self, hid: &str, fence: i64, step_id: &str) -> Result<Option<Value>> {
        check_hid(hid)?;
        self.read(|tx| {
            self.check_owner(tx, hid, fence)?;
            tx.effect(hid, step_id)?.map(|t| json::parse(&t)).transpose()
        })
    }

    /// Report an activity digest; returns how many times in a row it repeated.
    pub fn note_activity(&self, hid: &str, fence: i64, digest: &str) -> Result<i64> {
        check_hid(hid)?;
        self.write(|tx| {
            self.check_owner(tx, hid, fence)?;
            let t = tx.now()?;
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
