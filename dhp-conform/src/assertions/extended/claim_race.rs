//! The `claim-race` assertion.

use crate::assertions::core::{race, RACERS};
use crate::assertions::{new_handoff, OWNED_OR_STATE};
use crate::check::{Check, Fail};
use crate::client::Reply;
use crate::suite::Ctx;
use crate::{ensure, ensure_eq};
use serde_json::json;

/// N processes claim one pending handoff at one instant: exactly one wins.
pub fn claim_race(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let mut racers = cx.fresh_many(RACERS)?;
    for r in racers.iter_mut() {
        r.open(&root)?;
    }
    let outcomes = race(&mut racers, "claim", |i| json!({"root": root, "worker": format!("c{i}"), "hid": hid}))?;
    let winners: Vec<usize> =
        outcomes.iter().enumerate().filter(|(_, r)| matches!(r, Reply::Ok(_))).map(|(i, _)| i).collect();
    ensure!(winners.len() == 1, "{} of {RACERS} racing claimers won (want exactly 1): {outcomes:?}", winners.len());
    for (i, r) in outcomes.iter().enumerate() {
        if let Reply::Err(e) = r {
            ensure!(
                OWNED_OR_STATE.contains(&e.kind.as_str()),
                "loser c{i} was refused with {e}, want an ownership or state error"
            );
        }
    }
    let w = format!("c{}", winners[0]);
    let st = m.status(&root, &hid)?;
    ensure_eq!(st["owner"], json!(w), "owner after the race");
    ensure_eq!(st["status"], json!("running"), "status after the race");
    if let Some(db) = cx.store(&root)? {
        let o = db.ownership(&hid)?.ok_or_else(|| Fail::failed("no ownership row after the race"))?;
        ensure_eq!((o.holder.as_str(), o.fence), (w.as_str(), 0), "stored holder and fence");
    }
    // a row already there (a claim killed between its two writes) is an
    // owner: a claim of that handoff is refused and changes nothing
    if let Some(db) = cx.store(&root)? {
        let h2 = new_handoff(&mut m, &root, 2)?;
        db.insert_ownership(&h2, "ghost", 0, cx.now())?;
        let before = db.must_envelope(&h2)?;
        m.must_fail(
            "claim",
            json!({"root": root, "worker": "w9", "hid": h2}),
            &["OwnershipLost"],
            "claim of a pending handoff whose ownership row exists",
        )?;
        ensure_eq!(db.must_envelope(&h2)?, before, "the envelope after the refused claim");
        let own = db.ownership(&h2)?.ok_or_else(|| Fail::failed("the ownership row is gone after a refused claim"))?;
        ensure_eq!((own.holder.as_str(), own.fence), ("ghost", 0), "the ownership row after the refused claim");
    }
    Ok(())
}
