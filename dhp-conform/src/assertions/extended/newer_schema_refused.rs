//! The `newer-schema-refused` assertion.

use crate::assertions::new_handoff;
use crate::check::{Check, Fail};
use crate::ensure_eq;
use crate::suite::Ctx;
use serde_json::json;

/// A store whose schema_version is newer than 3 is refused, and left as
/// it is.
pub fn newer_schema_refused(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let db = cx.store(&root)?.ok_or_else(|| Fail::Skipped("needs standard-store".into()))?;
    let before = db.must_envelope(&hid)?;
    ensure_eq!(db.max_schema_version()?, Some(3), "schema_version written by the implementation");
    // an older store is brought to 3 on open (§3.1), and keeps its handoffs
    db.set_schema_version(2, cx.now())?;
    cx.adapter()?.open(&root).map_err(|f| f.context("opening a store whose schema_version is 2"))?;
    ensure_eq!(db.max_schema_version()?, Some(3), "schema_version after opening a v2 store");
    ensure_eq!(db.must_envelope(&hid)?, before, "the envelope after the upgrade to v3");
    db.add_schema_version(4, cx.now())?;
    let mut other = cx.adapter()?;
    other.must_fail("open", json!({"root": root}), &["ValidationError"], "opening a store with schema v4")?;
    m.must_fail("open", json!({"root": root}), &["ValidationError"], "re-opening a store after it moved to schema v4")?;
    m.must_refuse("status", json!({"root": root, "hid": hid}), "status on a store with schema v4")?;
    ensure_eq!(db.max_schema_version()?, Some(4), "schema_version after the refusals (must not be downgraded)");
    ensure_eq!(db.handoff_count()?, 1, "handoffs rows after the refusals");
    ensure_eq!(db.must_envelope(&hid)?, before, "the stored envelope after the refusals");
    Ok(())
}
