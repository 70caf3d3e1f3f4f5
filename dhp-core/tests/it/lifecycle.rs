//! The runner and supervisor paths beyond the happy path: DLQ, stalls,
//! budget kills, leadership, heartbeats, effects, approvals, capabilities.
use crate::common::*;
use dhp_core::clock::ManualClock;
use dhp_core::envelope::{self, BuildOptions};
use dhp_core::supervisor::{OrphanReason, Supervisor};
use dhp_core::{Clock, Config, Error, Runner, TaskContext};
use dhp_testkit::store as testing;
use serde_json::{json, Value};
use std::time::Duration;

fn setup(budget: Option<Value>, caps: Option<Value>, cfg: Config) -> (tempfile::TempDir, Runner, Supervisor, String) {
    let dir = tempfile::tempdir().unwrap();
    let r = Runner::open(dir.path(), "w", cfg.clone()).unwrap();
    let env = envelope::build(
        "t",
        json!({"inline": {"n": 1}}),
        serde_json::from_str(SCHEMA_X).unwrap(),
        BuildOptions { budget, capabilities: caps, ..Default::default() },
    )
    .unwrap();
    let hid = r.dispatch(&env).unwrap();
    let sup = Supervisor::open(dir.path(), "sup", cfg).unwrap();
    (dir, r, sup, hid)
}

fn status(r: &Runner, hid: &str) -> String {
    r.status(hid).unwrap()["status"].as_str().unwrap().to_string()
}

#[test]
fn dead_letter_queue_at_max_attempts_keeps_checkpoints() {
    let budget = json!({"max_steps": 10, "max_spend_usd": 1.0, "max_wallclock_s": 60.0, "max_attempts": 1});
    let (_d, r, sup, hid) = setup(Some(budget), None, Config::default());
    let ctx = r.claim(&hid).unwrap();
    ctx.checkpoint(&json!({"s": 1})).unwrap();
    testing::expire_lease(&r, &hid).unwrap();
    assert_eq!(sup.scan().unwrap()[0].kind().as_str(), "orphaned");
    let w2 = r.with_id("w2").unwrap();
    let ctx2 = w2.recover(&hid).unwrap();
    ctx2.checkpoint(&json!({"s": 2})).unwrap();
    testing::expire_lease(&r, &hid).unwrap();
    let acts = sup.scan().unwrap();
    assert_eq!(acts[0].kind().as_str(), "dlq", "{acts:?}");
    assert_eq!(status(&r, &hid), "failed");
    assert_eq!(r.checkpoints(&hid).unwrap().len(), 2, "DLQ keeps checkpoints");
    assert!(r.status(&hid).unwrap()["error"].as_str().unwrap().contains("max_attempts"));
    assert!(w2.recover(&hid).is_err());
}

#[test]
fn orphan_rechecks_the_lease_under_the_lock() {
    let (_d, r, sup, hid) = setup(None, None, Config::default());
    let ctx = r.claim(&hid).unwrap();
    // The scan saw an expired lease, but the worker heartbeat in between.
    testing::expire_lease(&r, &hid).unwrap();
    let mut own = r.ownership(&hid).unwrap().unwrap();
    own.lease_expires_at = envelope::now() + 5.0;
    dhp_core::store::with_tx(r.store().as_ref(), dhp_core::store::Mode::Write, |tx| {
        tx.update_ownership(&own, dhp_core::StoreTime::now_local())
    })
    .unwrap();
    let a = sup.orphan_action(&hid, OrphanReason::LeaseExpired, None).unwrap();
    assert_eq!(a.kind().as_str(), "already-orphaned-or-released");
    ctx.checkpoint(&json!({"still": "mine"})).unwrap();
}

/// Let `secs` of protocol time pass while the worker heartbeats every
/// second of it (the default lease is 6 s).
fn pass_time(hand: &ManualClock, ctx: &TaskContext, secs: f64) {
    let mut left = secs;
    while left > 0.0 {
        let step = left.min(1.0);
        hand.advance(step);
        ctx.heartbeat().unwrap();
        left -= step;
    }
}

#[test]
fn heartbeat_extends_and_background_heartbeat_keeps_a_slow_worker() {
    let (clock, hand) = Clock::manual();
    let cfg = Config { lease_interval_s: 0.2, lease_max_missed: 2, clock, ..Config::default() };
    let (_d, r, sup, hid) = setup(None, None, cfg);
    let mut ctx = r.claim(&hid).unwrap();
    let lease_end = || r.ownership(&hid).unwrap().unwrap().lease_expires_at;
    let before = lease_end();
    hand.advance(0.05);
    // Epoch seconds carry ~1e-7 s of rounding.
    assert!((ctx.heartbeat().unwrap() - 0.4).abs() < 1e-6, "a heartbeat grants a full lease from now");
    assert!((lease_end() - (before + 0.05)).abs() < 1e-6);
    // Three lease lengths of "thinking", in steps shorter than a lease:
    // after each step the background heartbeat renews from the new time.
    ctx.start_heartbeat(None);
    for _ in 0..12 {
        hand.advance(0.1);
        let now = hand.now();
        dhp_testkit::wait_until(
            std::time::Duration::from_secs_f64(10.0),
            "the background heartbeat renewed the lease",
            || lease_end() >= now + 0.4,
        );
        assert!(sup.scan().unwrap().is_empty(), "a heartbeating worker is not orphaned");
    }
    ctx.checkpoint(&json!({"s": 1})).unwrap();
    ctx.stop_heartbeat();
    hand.advance(0.41);
    assert_eq!(sup.scan().unwrap()[0].kind().as_str(), "orphaned");
    assert!(matches!(ctx.checkpoint(&json!({"s": 2})), Err(Error::StaleFence { .. })));
}

#[test]
fn release_idempotent_complete_and_ack() {
    let (_d, r, _sup, hid) = setup(None, None, Config::default());
    let mut ctx = r.claim(&hid).unwrap();
    ctx.release("shutting down").unwrap();
    assert_eq!(status(&r, &hid), "pending");
    assert!(r.ownership(&hid).unwrap().is_none());
    let mut ctx = r.claim(&hid).unwrap();
    assert!(r.ack(&hid).is_err(), "ack only after complete");
    ctx.complete(&json!({"x": 1})).unwrap();
    r.complete(ctx.lease(), &json!({"x": 1})).unwrap();
    assert_eq!(r.status(&hid).unwrap()["result"], json!({"x": 1}));
    r.ack(&hid).unwrap();
    assert_eq!(r.status(&hid).unwrap()["acked"], true);
}

#[test]
fn bad_output_parks_the_handoff_as_failed() {
    let (_d, r, _sup, hid) = setup(None, None, Config::default());
    let mut ctx = r.claim(&hid).unwrap();
    let e = ctx.complete(&json!({"x": "not an integer"})).unwrap_err();
    assert!(matches!(e, Error::SchemaViolation { .. }), "{e:?}");
    let st = r.status(&hid).unwrap();
    assert_eq!(st["status"], "failed");
    assert!(st["error"].as_str().unwrap().starts_with("schema validation"));
    assert!(r.ownership(&hid).unwrap().is_none());
}

#[test]
fn budget_in_the_worker_and_in_the_supervisor() {
    let budget = json!({"max_steps": 2, "max_spend_usd": 1.0, "max_wallclock_s": 60.0, "max_attempts": 3});
    let (_d, r, sup, hid) = setup(Some(budget), None, Config::default());
    let ctx = r.claim(&hid).unwrap();
    ctx.note_step(2).unwrap();
    assert!(matches!(ctx.note_step(1), Err(Error::BudgetExceeded { .. })));
    let acts = sup.scan().unwrap();
    assert_eq!(acts[0].kind().as_str(), "budget-killed", "{acts:?}");
    assert_eq!(status(&r, &hid), "failed");
    assert!(ctx.checkpoint(&json!({})).is_err(), "a budget-killed worker is fenced out");

    let budget = json!({"max_steps": 100, "max_spend_usd": 1.0, "max_wallclock_s": 60.0, "max_attempts": 3});
    let (_d, r, sup, hid) = setup(Some(budget), None, Config::default());
    let ctx = r.claim(&hid).unwrap();
    ctx.note_spend(0.75).unwrap();
    assert!(sup.scan().unwrap().is_empty(), "within budget: nothing to do");
    assert!(matches!(ctx.note_spend(0.5), Err(Error::BudgetExceeded { .. })));
    let acts = sup.scan().unwrap();
    assert_eq!(acts[0].kind().as_str(), "budget-killed", "{acts:?}");
    assert!(acts[0].to_json()["reasons"][0].as_str().unwrap().starts_with("spend $1.25"), "{acts:?}");

    // Wall clock, as the reference stores claimed_at (a float).
    let budget = json!({"max_steps": 100, "max_spend_usd": 1.0, "max_wallclock_s": 30.0, "max_attempts": 3});
    let (clock, hand) = Clock::manual();
    let (_d, r, sup, hid) = setup(Some(budget), None, Config { clock, ..Config::default() });
    let ctx = r.claim(&hid).unwrap();
    pass_time(&hand, &ctx, 29.5);
    assert!(sup.scan().unwrap().is_empty(), "within the wall-clock budget");
    pass_time(&hand, &ctx, 1.0);
    assert_eq!(sup.scan().unwrap()[0].kind().as_str(), "budget-killed");
    assert!(ctx.checkpoint(&json!({})).is_err());
}

#[test]
fn stall_orphans_then_dead_letters_after_max_stall_retries() {
    let cfg = Config { stall_max_repeats: 3, ..Config::default() };
    let (_d, r, sup, hid) = setup(None, None, cfg);
    let mut worker = r.clone();
    // max_stall_retries defaults to 2: the third stall goes to the DLQ.
    for round in 1..=3 {
        let ctx = if round == 1 { worker.claim(&hid).unwrap() } else { worker.recover(&hid).unwrap() };
        for _ in 0..3 {
            ctx.note_activity("same-tool-same-args").unwrap();
        }
        let acts = sup.scan().unwrap();
        let want = if round < 3 { "orphaned" } else { "dlq" };
        assert_eq!(acts[0].kind().as_str(), want, "round {round}: {acts:?}");
        worker = r.with_id(&format!("w{round}")).unwrap();
    }
    assert!(r.status(&hid).unwrap()["error"].as_str().unwrap().contains("livelock"));
}

#[test]
fn leadership_one_leader_and_takeover() {
    let (d, r, s1, _hid) = setup(None, None, Config::default());
    let s2 = Supervisor::open(d.path(), "sup2", Config::default()).unwrap();
    assert!(s1.ensure_leadership().unwrap());
    assert!(!s2.ensure_leadership().unwrap());
    assert!(s2.scan().unwrap().is_empty(), "a follower does not scan");
    testing::expire_leadership(&r).unwrap();
    assert!(s2.ensure_leadership().unwrap());
    assert!(!s1.ensure_leadership().unwrap());
    assert_eq!(testing::leader(&r).unwrap().unwrap().holder, "sup2");
    s2.resign().unwrap();
    assert!(s1.ensure_leadership().unwrap(), "resigning hands over at once");
}

#[test]
fn effects_first_write_wins_and_capabilities_fail_closed() {
    let caps = json!({"network": ["api.example.com"]});
    let (_d, r, _sup, hid) = setup(None, Some(caps), Config::default());
    let ctx = r.claim(&hid).unwrap();
    assert!(ctx.record_effect("charge-1", &json!({"id": "ch_1"})).unwrap());
    assert!(!ctx.record_effect("charge-1", &json!({"id": "ch_2"})).unwrap());
    assert_eq!(ctx.effect_done("charge-1").unwrap(), Some(json!({"id": "ch_1"})));
    ctx.require_capability("network", "api.example.com").unwrap();
    ctx.require_capability("dhp", "anything").unwrap();
    assert!(matches!(ctx.require_capability("network", "evil.example.com"), Err(Error::CapabilityDenied { .. })));
    assert!(matches!(ctx.require_capability("filesystem", "/"), Err(Error::CapabilityDenied { .. })));
    let audit = r.capability_audit(&hid).unwrap();
    assert_eq!(audit.iter().map(|a| a.granted).collect::<Vec<_>>(), vec![true, true, false, false]);
}

#[test]
fn approvals_fail_closed_until_decided() {
    let (clock, hand) = Clock::manual();
    let (_d, r, sup, hid) = setup(None, None, Config { clock, ..Config::default() });
    let ctx = r.claim(&hid).unwrap();
    ctx.request_approval("read", &json!({}), 60.0).unwrap();
    let Err(Error::ApprovalRequired { approval_id, .. }) = ctx.request_approval("financial", &json!({"usd": 5}), 60.0)
    else {
        panic!("financial actions need approval")
    };
    assert!(r.decide_approval(&approval_id, true).unwrap());
    ctx.await_approval(&approval_id, Duration::from_millis(10)).unwrap();
    let Err(Error::ApprovalRequired { approval_id, .. }) = ctx.request_approval("destructive", &json!({}), 60.0) else {
        panic!()
    };
    let status_of = |id: &str| {
        let st = r.status(&hid).unwrap();
        let a = st["approvals"].as_array().unwrap().iter().find(|a| a["approval_id"] == id).unwrap().clone();
        a["status"].as_str().unwrap().to_string()
    };
    pass_time(&hand, &ctx, 59.5);
    sup.scan().unwrap();
    assert_eq!(status_of(&approval_id), "pending", "not expired before its timeout");
    pass_time(&hand, &ctx, 1.0);
    sup.scan().unwrap();
    assert_eq!(status_of(&approval_id), "expired");
    assert!(matches!(ctx.await_approval(&approval_id, Duration::from_millis(10)), Err(Error::ApprovalDenied { .. })));
    assert!(!r.decide_approval(&approval_id, true).unwrap(), "an expired approval cannot be approved later");
    assert_eq!(r.status(&hid).unwrap()["approvals"].as_array().unwrap().len(), 2);
}

#[test]
fn batches_share_one_transaction_and_keep_per_item_errors() {
    let dir = tempfile::tempdir().unwrap();
    let r = Runner::open(dir.path(), "w", Config::default()).unwrap();
    let mk = |n: i64| {
        envelope::build("t", json!({"inline": {"n": n}}), serde_json::from_str(SCHEMA_X).unwrap(), Default::default())
            .unwrap()
    };
    let mut tampered = mk(99);
    tampered["task"]["inputs"]["inline"]["n"] = json!(100);
    let ids = r.dispatch_many(&[mk(1), tampered, mk(2)]).unwrap();
    assert!(ids[0].is_ok() && ids[2].is_ok());
    assert_eq!(ids[1].as_ref().unwrap_err().kind(), "TamperError", "the item keeps its typed error");
    let hids: Vec<String> = vec![ids[0].as_ref().unwrap().clone(), "0".repeat(64), ids[2].as_ref().unwrap().clone()];
    let ctxs = r.claim_many(&hids).unwrap();
    assert_eq!(ctxs[1].as_ref().unwrap_err().kind(), "UnknownHandoff");
    let (a, b) = (ctxs[0].as_ref().unwrap(), ctxs[2].as_ref().unwrap());
    let items = vec![
        dhp_core::runner::CheckpointItem {
            hid: a.hid().into(),
            holder: "w".into(),
            fence: 0.into(),
            state: json!({"s": 1}),
        },
        dhp_core::runner::CheckpointItem {
            hid: b.hid().into(),
            holder: "w".into(),
            fence: 7.into(),
            state: json!({"s": 1}),
        },
        dhp_core::runner::CheckpointItem {
            hid: b.hid().into(),
            holder: "w".into(),
            fence: 0.into(),
            state: json!([1]),
        },
        dhp_core::runner::CheckpointItem {
            hid: a.hid().into(),
            holder: "w".into(),
            fence: 0.into(),
            state: json!({"s": 2}),
        },
    ];
    let seqs = dhp_core::runner::checkpoint_many(r.store().as_ref(), &Config::default(), &items).unwrap();
    assert_eq!(seqs[0].as_ref().unwrap(), &0);
    assert_eq!(seqs[1].as_ref().unwrap_err().kind(), "FencingError");
    assert_eq!(seqs[2].as_ref().unwrap_err().kind(), "ValidationError");
    assert_eq!(seqs[3].as_ref().unwrap(), &1);
    assert_eq!(r.checkpoints(a.hid()).unwrap().len(), 2);
    assert!(r.checkpoints(b.hid()).unwrap().is_empty());
}
