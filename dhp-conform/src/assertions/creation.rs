//! Creating a store: several processes opening one new store at once.

use super::core::{race, RACERS};
use super::new_handoff;
use crate::check::Check;
use crate::client::Reply;
use crate::suite::Ctx;
use crate::{ensure, ensure_eq};
use serde_json::json;

/// concurrent-create: RACERS processes open one empty root at one instant.
/// Workers on a fresh host start together, so the store's creation races
/// with itself: every opener must succeed (one creates, the others find
/// its store, none is told the store is broken), and all of them must
/// then share that one store.
pub fn concurrent_create(cx: &Ctx<'_>) -> Check {
    let root = cx.root("new-store")?;
    let mut racers = cx.fresh_many(RACERS)?;
    let outcomes = race(&mut racers, "open", |_| json!({"root": root}))?;
    for (i, r) in outcomes.iter().enumerate() {
        ensure!(matches!(r, Reply::Ok(_)), "opener {i} of {RACERS} racing to create one store was refused: {r:?}");
    }
    // one store: a handoff dispatched through any opener is every opener's
    let mut hids = Vec::with_capacity(racers.len());
    for (i, r) in racers.iter_mut().enumerate() {
        hids.push(new_handoff(r, &root, i as i64)?);
    }
    for (i, r) in racers.iter_mut().enumerate() {
        for (j, hid) in hids.iter().enumerate() {
            ensure_eq!(r.status(&root, hid)?["status"], json!("pending"), "opener {i}'s view of opener {j}'s handoff");
        }
    }
    if let Some(db) = cx.store(&root)? {
        ensure_eq!(db.handoff_count()?, hids.len() as i64, "handoffs rows in the store file");
    }
    Ok(())
}
