//! The `heartbeat-extends-lease` assertion.

use super::helpers::lease_expiry;
use crate::assertions::new_handoff;
use crate::check::{Check, Fail};
use crate::client::Profile;
use crate::ensure;
use crate::suite::Ctx;
use serde_json::json;

/// A heartbeat pushes the lease out: past the original expiry (real time,
/// 1 s leases) the worker still writes.
pub fn heartbeat_extends_lease(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter_with(Profile::ShortLease)?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let t = m.claim(&root, "w1", &hid)?;
    let e0 = lease_expiry(&mut m, &root, &hid)?;
    let ttl = e0 - cx.now();
    ensure!(
        (0.3..=1.2).contains(&ttl),
        "with DHP_LEASE_INTERVAL_S=0.5 and DHP_LEASE_MAX_MISSED=2 a fresh lease should run ~1.0 s, it runs {ttl:.3} s"
    );
    cx.wait_until(e0 - 0.4);
    // the heartbeat happens after `asked`: the seconds it reports left
    // cannot exceed what the stored lease has left from then (a bound a
    // loaded machine cannot break, unlike one taken after the answer)
    let asked = cx.now();
    let left = m.heartbeat(&t)?;
    let e1 = lease_expiry(&mut m, &root, &hid)?;
    ensure!(e1 > e0 + 0.3, "heartbeat must push the lease out: expiry {e0:.3} -> {e1:.3}");
    ensure!(
        left > 0.5 && left <= e1 - asked + 0.05,
        "heartbeat reports {left:.3} s left, want about the lease TTL (the stored lease ends {:.3} s after the heartbeat was sent)",
        e1 - asked
    );
    if let Some(db) = cx.store(&root)? {
        let o = db.ownership(&hid)?.ok_or_else(|| Fail::failed("no ownership row"))?;
        ensure!(
            (o.lease_expires_at - e1).abs() < 0.01,
            "stored lease_expires_at {} != reported {e1}",
            o.lease_expires_at
        );
    }
    cx.wait_until(e0 + 0.2);
    m.checkpoint(&t, json!({"s": 1}))
        .map_err(|f| f.context("checkpoint past the original expiry, within the extended lease"))?;
    if let Some(db) = cx.store(&root)? {
        stored_terms(cx, &db, &mut m, &t)?;
    }
    Ok(())
}

/// A heartbeat extends by the terms stored in the ownership row (§5.1,
/// §5.5), not by the process's own configuration: the runner rewrites the
/// row's terms and heartbeats.
fn stored_terms(
    cx: &Ctx<'_>,
    db: &crate::store_view::StoreView,
    m: &mut crate::client::Adapter,
    t: &crate::ops::Token,
) -> Check {
    let (interval, missed) = (4.0, 2);
    let changed = db.set_lease_terms(&t.hid, interval, missed)?;
    ensure!(changed == 1, "the runner could not set the ownership row's lease terms ({changed} rows changed)");
    let before = cx.now();
    let left = m.heartbeat(t)?;
    let e = lease_expiry(m, &t.root, &t.hid)?;
    let ttl = interval * missed as f64;
    ensure!(
        (e - before - ttl).abs() < 0.5 && (left - ttl).abs() < 0.5,
        "§5.5 (a heartbeat sets lease_expires_at := now + heartbeat_interval_s × max_missed from the ownership row): the runner set the stored row's {} (TTL {ttl} s; this process is configured for 0.5 s × 2 = 1 s); after a heartbeat lease_expires_at is now + {:.3} s and the heartbeat reports {:.3} s left, want {ttl} s (± 0.5) for both",
        json!({"heartbeat_interval_s": interval, "max_missed": missed}),
        e - before,
        left
    );
    Ok(())
}
