//! The repair needs nothing SQLite-specific: on the in-memory backend (the
//! trait's default `pairings`, which keeps no row timestamps) a torn claim
//! and a torn orphan are repaired the same way.

use dhp_core::envelope::{self, now, BuildOptions, ORPHANED_HOLDER};
use dhp_core::store::{with_tx, MemStore, Mode, Ownership};
use dhp_core::supervisor::ScanAction;
use dhp_core::supervisor::Supervisor;
use dhp_core::{Config, Runner};
use serde_json::json;
use std::sync::Arc;

#[test]
fn torn_claim_and_torn_orphan_are_repaired_on_the_memory_backend() {
    let store = Arc::new(MemStore::new());
    let cfg = Config { lease_interval_s: 0.1, lease_max_missed: 2, ..Config::default() };
    let r = Runner::new(store.clone(), "w1", cfg.clone()).unwrap();
    let mut hids = Vec::new();
    for n in 0..2 {
        let env = envelope::build("m", json!({"inline": {"n": n}}), json!({}), BuildOptions::default()).unwrap();
        hids.push(r.dispatch(&env).unwrap());
    }
    // hids[0]: pending + expired holder; hids[1]: orphaned + expired holder.
    with_tx(store.as_ref(), Mode::Write, |tx| {
        for (i, hid) in hids.iter().enumerate() {
            let row = Ownership {
                hid: hid.clone(),
                holder: "gone".into(),
                fence: dhp_core::Fence::new(2),
                lease_expires_at: now() - 1.0,
                heartbeat_interval_s: 0.1,
                max_missed: 2,
            };
            tx.insert_ownership(&row, dhp_core::StoreTime::now_local())?;
            if i == 1 {
                let mut env = tx.envelope(hid)?.unwrap();
                env["execution"]["status"] = json!("orphaned");
                tx.update_envelope(hid, &env.to_string(), dhp_core::StoreTime::now_local())?;
            }
        }
        Ok(())
    })
    .unwrap();
    let sup = Supervisor::new(store.clone(), "sup", cfg, None).unwrap();
    let acts = sup.scan().unwrap();
    let torn: Vec<_> = acts
        .iter()
        .map(|a| match a {
            ScanAction::Repaired(r) => r.torn.as_str(),
            _ => "",
        })
        .collect();
    assert_eq!(torn.len(), 2, "{acts:?}");
    assert!(torn.contains(&"torn-claim") && torn.contains(&"torn-orphan"), "{acts:?}");
    for hid in &hids {
        let own = r.ownership(hid).unwrap().unwrap();
        assert_eq!((own.holder.as_str(), own.fence.get()), (ORPHANED_HOLDER, 3));
        let mut ctx = r.with_id("w2").unwrap().recover(hid).unwrap();
        assert_eq!(ctx.fence().get(), 4);
        ctx.complete(&json!({})).unwrap();
    }
    assert_eq!(sup.metrics.repairs.load(std::sync::atomic::Ordering::Relaxed), 2);
}
