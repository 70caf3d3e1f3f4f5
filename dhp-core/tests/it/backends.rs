//! The protocol logic runs unchanged on any backend: the same scenario on
//! the SQLite store, the in-memory one and PostgreSQL gives the same
//! outcome.

use crate::pg_support;

use dhp_core::envelope::{self, BuildOptions};
use dhp_core::store::{self, Backend, MemStore, SqliteStore, StoreLocation};
use dhp_core::supervisor::Supervisor;
use dhp_core::{runner, Config, Error, Runner};
use dhp_testkit::store as testing;
use serde_json::json;
use std::sync::Arc;

fn scenario(store: Arc<dyn Backend>) -> Vec<String> {
    let cfg = Config::default();
    let mut trace = Vec::new();
    let w1 = Runner::new(store.clone(), "w1", cfg.clone()).unwrap();
    let sup = Supervisor::new(store.clone(), "sup", cfg.clone(), None).unwrap();
    let schema = json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]});
    let budget = json!({"max_steps": 5, "max_spend_usd": 1.0, "max_wallclock_s": 60.0, "max_attempts": 2});
    let env = envelope::build(
        "t",
        json!({"inline": {"n": 1}}),
        schema,
        BuildOptions { budget: Some(budget), ..Default::default() },
    )
    .unwrap();
    let hid = w1.dispatch(&env).unwrap();
    assert_eq!(w1.dispatch(&env).unwrap(), hid, "re-dispatch is idempotent");
    let ctx = w1.claim(&hid).unwrap();
    assert!(matches!(w1.claim(&hid), Err(Error::State { .. })));
    for i in 0..3 {
        trace.push(format!("seq {}", ctx.checkpoint(&json!({"i": i})).unwrap()));
    }
    testing::expire_lease(&w1, &hid).unwrap();
    assert!(matches!(ctx.checkpoint(&json!({})), Err(Error::LeaseLost { .. })));
    let acts = sup.scan().unwrap();
    trace.push(format!("scan {}", acts[0].to_json()["action"]));
    let w2 = w1.with_id("w2").unwrap();
    let w3 = w1.with_id("w3").unwrap();
    let mut ctx2 = w2.recover(&hid).unwrap();
    assert!(w3.recover(&hid).is_err(), "one recoverer wins");
    trace.push(format!("fence {}", ctx2.fence()));
    assert!(matches!(ctx.checkpoint(&json!({})), Err(Error::StaleFence { .. })));
    trace.push(format!("resumed at {}", w2.last_checkpoint(&hid).unwrap().unwrap()["i"]));
    assert!(ctx2.note_step(6).is_err(), "budget enforced");
    trace.push(format!("scan {}", sup.scan().unwrap()[0].to_json()["action"]));
    assert!(ctx2.complete(&json!({"x": 1})).is_err(), "budget-killed: fenced out");
    let st = w1.status(&hid).unwrap();
    trace.push(format!("{} attempt {} checkpoints {}", st["status"], st["attempt"], st["checkpoints"]));

    // A second handoff: bundle out, bundle in, complete, ack.
    let env2 = envelope::build("t", json!({"inline": {"n": 2}}), json!({}), Default::default()).unwrap();
    let h2 = w1.dispatch(&env2).unwrap();
    let c = w1.claim(&h2).unwrap();
    c.checkpoint(&json!({"k": 1})).unwrap();
    let bundle = w1.suspend(&h2).unwrap();
    let other: Arc<dyn Backend> = Arc::new(MemStore::new());
    let r = Runner::new(other, "w9", cfg).unwrap();
    r.resume(&bundle).unwrap();
    let mut c9 = r.claim(&h2).unwrap();
    c9.complete(&json!({"done": true})).unwrap();
    r.ack(&h2).unwrap();
    trace.push(format!("bundle {} acked {}", r.status(&h2).unwrap()["status"], r.status(&h2).unwrap()["acked"]));
    trace
}

/// Effects, approvals, capabilities, stall detection, leadership and the
/// batched operations: every remaining storage primitive, through the
/// protocol.
fn scenario_extras(store: Arc<dyn Backend>) -> Vec<String> {
    let cfg = Config { stall_max_repeats: 3, ..Config::default() };
    let mut trace = Vec::new();
    let w = Runner::new(store.clone(), "w1", cfg.clone()).unwrap();
    let caps = json!({"network": ["api.example.com"]});
    let env = envelope::build(
        "x",
        json!({"n": 10}),
        json!({}),
        BuildOptions { capabilities: Some(caps), ..Default::default() },
    )
    .unwrap();
    let hid = w.dispatch(&env).unwrap();
    let ctx = w.claim(&hid).unwrap();
    trace.push(format!(
        "effect {} {}",
        ctx.record_effect("s1", &json!({"r": 1})).unwrap(),
        ctx.record_effect("s1", &json!({"r": 2})).unwrap()
    ));
    trace.push(format!("effect_done {}", ctx.effect_done("s1").unwrap().unwrap()));
    assert!(ctx.effect_done("s2").unwrap().is_none());
    assert!(ctx.request_approval("read", &json!({}), 60.0).is_ok());
    let Err(Error::ApprovalRequired { approval_id, .. }) = ctx.request_approval("financial", &json!({"usd": 5}), 60.0)
    else {
        panic!("financial needs approval")
    };
    trace.push(format!(
        "decide {} {}",
        w.decide_approval(&approval_id, true).unwrap(),
        w.decide_approval(&approval_id, false).unwrap()
    ));
    ctx.await_approval(&approval_id, std::time::Duration::from_millis(1)).unwrap();
    let Err(Error::ApprovalRequired { approval_id: a2, .. }) = ctx.request_approval("destructive", &json!({}), -1.0)
    else {
        panic!("destructive needs approval")
    };
    trace.push(format!(
        "expired {}",
        matches!(ctx.await_approval(&a2, std::time::Duration::from_millis(1)), Err(Error::ApprovalDenied { .. }))
    ));
    ctx.require_capability("network", "api.example.com").unwrap();
    assert!(matches!(ctx.require_capability("network", "evil.example.com"), Err(Error::CapabilityDenied { .. })));
    let audit = w.capability_audit(&hid).unwrap();
    trace.push(format!("audit {:?}", audit.iter().map(|a| (a.resource.as_str(), a.granted)).collect::<Vec<_>>()));
    let st = w.status(&hid).unwrap();
    trace.push(format!("status effects {} approvals {}", st["effects"], st["approvals"].as_array().unwrap().len()));

    // Stall: the same digest three times, then the leader orphans it.
    for _ in 0..3 {
        ctx.note_activity("same").unwrap();
    }
    let s1 = Supervisor::new(store.clone(), "s1", cfg.clone(), None).unwrap();
    let s2 = Supervisor::new(store.clone(), "s2", cfg.clone(), None).unwrap();
    let acts = s1.scan().unwrap();
    trace.push(format!("stall {} {}", acts[0].to_json()["action"], acts[0].to_json()["reason"]));
    trace.push(format!("follower {}", s2.scan().unwrap().len()));
    testing::expire_leadership(&w).unwrap();
    s2.scan().unwrap();
    trace.push(format!("leader {}", testing::leader(&w).unwrap().unwrap().holder));
    s2.resign().unwrap();
    trace.push(format!("resigned {}", s1.ensure_leadership().unwrap()));

    // Batches: three dispatched, claimed and checkpointed in one transaction each.
    let envs: Vec<_> =
        (0..3).map(|i| envelope::build("b", json!({"i": i}), json!({}), Default::default()).unwrap()).collect();
    let hids: Vec<String> = w.dispatch_many(&envs).unwrap().into_iter().map(Result::unwrap).collect();
    let ctxs: Vec<_> = w.claim_many(&hids).unwrap().into_iter().map(Result::unwrap).collect();
    let items: Vec<_> = ctxs
        .iter()
        .map(|c| runner::CheckpointItem {
            hid: c.hid().into(),
            holder: "w1".into(),
            fence: c.fence(),
            state: json!({"k": 1}),
        })
        .chain(std::iter::once(runner::CheckpointItem {
            hid: hids[0].clone(),
            holder: "w1".into(),
            fence: dhp_core::Fence::new(7),
            state: json!({}),
        }))
        .collect();
    let seqs = runner::checkpoint_many(store.as_ref(), &cfg, &items).unwrap();
    trace.push(format!(
        "batch {:?}",
        seqs.iter().map(|r| r.as_ref().map_err(|e| e.kind()).copied()).collect::<Vec<_>>()
    ));
    let mut all = w.all_hids().unwrap();
    all.sort();
    assert_eq!(all, w.all_hids().unwrap(), "all_hids is sorted");
    trace.push(format!("hids {}", all.len()));
    trace
}

#[test]
fn sqlite_memory_and_postgres_backends_behave_alike() {
    let dir = tempfile::tempdir().unwrap();
    let on_sqlite = scenario(Arc::new(SqliteStore::open(dir.path()).unwrap()));
    let on_memory = scenario(Arc::new(MemStore::new()));
    let url = pg_support::fresh_url("backends");
    let on_postgres = scenario(store::open(&StoreLocation::parse(&url).unwrap()).unwrap());
    assert_eq!(on_sqlite, on_memory);
    assert_eq!(on_postgres, on_memory);
    assert_eq!(
        on_memory,
        vec![
            "seq 0",
            "seq 1",
            "seq 2",
            "scan \"orphaned\"",
            "fence 2",
            "resumed at 2",
            "scan \"budget-killed\"",
            "\"failed\" attempt 1 checkpoints 3",
            "bundle \"completed\" acked true",
        ]
    );
}

#[test]
fn extras_behave_alike_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let on_sqlite = scenario_extras(Arc::new(SqliteStore::open(dir.path()).unwrap()));
    let on_memory = scenario_extras(Arc::new(MemStore::new()));
    let url = pg_support::fresh_url("extras");
    let on_postgres = scenario_extras(store::open(&StoreLocation::parse(&url).unwrap()).unwrap());
    assert_eq!(on_sqlite, on_memory);
    assert_eq!(on_postgres, on_memory);
    assert_eq!(
        on_memory,
        vec![
            "effect true false",
            "effect_done {\"r\":1}",
            "decide true false",
            "expired true",
            "audit [(\"api.example.com\", true), (\"evil.example.com\", false)]",
            "status effects 1 approvals 2",
            "stall \"orphaned\" \"stalled\"",
            "follower 0",
            "leader s2",
            "resigned true",
            "batch [Ok(0), Ok(0), Ok(0), Err(\"FencingError\")]",
            "hids 4",
        ]
    );
}
