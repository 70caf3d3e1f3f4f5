//! The `effects-first-write-wins` assertion.

use super::helpers::effect;
use crate::assertions::new_handoff;
use crate::check::{Check, Fail};
use crate::ensure_eq;
use crate::suite::Ctx;
use serde_json::json;

/// A side effect is recorded once: the first write wins, across workers
/// and recoveries.
pub fn effects_first_write_wins(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let t = m.claim(&root, "w1", &hid)?;
    let r = effect(&mut m, &t, "record_effect", "charge-1", Some(json!({"charge_id": "ch_1"})))?;
    ensure_eq!(r["recorded"], json!(true), "first record_effect");
    let r = effect(&mut m, &t, "record_effect", "charge-1", Some(json!({"charge_id": "ch_2"})))?;
    ensure_eq!(r["recorded"], json!(false), "second record_effect of the same step");
    let d = effect(&mut m, &t, "effect_done", "charge-1", None)?;
    ensure_eq!((d["done"].clone(), d["result"].clone()), (json!(true), json!({"charge_id": "ch_1"})), "effect_done");
    ensure_eq!(
        effect(&mut m, &t, "effect_done", "refund-1", None)?["done"],
        json!(false),
        "effect_done of a step never run"
    );
    m.orphan_via_scan(&t, "s1")?;
    let t2 = m.recover(&root, "w2", &hid)?;
    let d = effect(&mut m, &t2, "effect_done", "charge-1", None)?;
    ensure_eq!(d["result"], json!({"charge_id": "ch_1"}), "effect_done seen by the recovering worker");
    let r = effect(&mut m, &t2, "record_effect", "charge-1", Some(json!({"charge_id": "ch_3"})))?;
    ensure_eq!(r["recorded"], json!(false), "record_effect by the recovering worker");
    if let Some(db) = cx.store(&root)? {
        let want = dhp_oracle::json::sorted(&json!({"charge_id": "ch_1"})).map_err(|e| Fail::Errored(e.to_string()))?;
        ensure_eq!(db.effects(&hid)?, vec![("charge-1".to_string(), want)], "effects rows");
    }
    Ok(())
}
