//! Issue 21 item 2: the liveness poll tests each worker's token once and
//! reads the store only for a dead one. Among 20 live holders (tokens held
//! by this process) and their handoffs, one holder published a token and
//! died: its handoffs, and only those, are orphaned; its token file is then
//! removed so later polls do not test it again; live tokens stay.

use dhp_core::envelope::{self, BuildOptions};
use dhp_core::{liveness, Config, Runner, Supervisor};
use serde_json::json;

#[test]
fn only_the_dead_holders_handoffs_are_orphaned_and_its_token_is_reaped() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let cfg = Config { lease_interval_s: 600.0, lease_max_missed: 3, ..Config::default() };
    let base = Runner::open(root, "dispatcher", cfg.clone()).unwrap();
    let mut tokens = Vec::new();
    let mut by_holder = Vec::new();
    for w in 0..21 {
        let holder = format!("w{w}");
        let r = base.with_id(&holder).unwrap();
        let mut mine = Vec::new();
        for i in 0..5 {
            let env = envelope::build("scale", json!({"inline": {"w": w, "i": i}}), json!({}), BuildOptions::default())
                .unwrap();
            let hid = r.dispatch(&env).unwrap();
            r.claim(&hid).unwrap();
            mine.push(hid);
        }
        if w == 13 {
            // Published and died: the file stays (kill -9 unlinks nothing)
            // and no process holds its lock.
            std::fs::write(root.join(liveness::DIR).join("w13.lock"), b"").unwrap();
        } else {
            tokens.push(liveness::publish(root, r.id()).unwrap());
        }
        by_holder.push((holder, mine));
    }
    assert_eq!(liveness::dead_tokens(root), ["w13"]);

    let sup = Supervisor::open(root, "sup", cfg).unwrap();
    assert!(sup.ensure_leadership().unwrap());
    let acts = sup.dead_workers().unwrap();
    let mut orphaned: Vec<&str> = acts.iter().map(|a| a.hid()).collect();
    orphaned.sort();
    let mut want: Vec<&str> = by_holder[13].1.iter().map(String::as_str).collect();
    want.sort();
    assert_eq!(orphaned, want, "{acts:?}");
    assert!(acts.iter().all(|a| a.kind().as_str() == "orphaned" && a.to_json()["reason"] == "worker-died"), "{acts:?}");
    for (holder, hids) in &by_holder {
        for h in hids {
            let o = base.ownership(h).unwrap().unwrap();
            let want = if holder == "w13" { "__orphaned__" } else { holder.as_str() };
            assert_eq!(o.holder, want);
        }
    }
    // The dead token is gone, the live ones are untouched; the next poll
    // finds nothing to do.
    assert!(!root.join(liveness::DIR).join("w13.lock").exists());
    assert!(root.join(liveness::DIR).join("w12.lock").exists());
    assert!(liveness::dead_tokens(root).is_empty());
    assert!(sup.dead_workers().unwrap().is_empty());
    // A new process may publish the reaped id again.
    let again = liveness::publish(root, &dhp_core::WorkerId::parse("w13").unwrap()).unwrap();
    assert!(!liveness::is_dead(root, "w13"));
    drop(again);
    drop(tokens);
}
