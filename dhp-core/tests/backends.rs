//! The protocol logic runs unchanged on any backend: the same scenario on
//! the SQLite store and on the in-memory one gives the same outcome.

use dhp_core::envelope::{self, BuildOptions};
use dhp_core::store::{Backend, MemStore, SqliteStore};
use dhp_core::supervisor::Supervisor;
use dhp_core::{testing, Config, Error, Runner};
use serde_json::json;
use std::sync::Arc;

fn scenario(store: Arc<dyn Backend>) -> Vec<String> {
    let cfg = Config::default();
    let mut trace = Vec::new();
    let w1 = Runner::new(store.clone(), "w1", cfg.clone()).unwrap();
    let sup = Supervisor::new(store.clone(), "sup", cfg.clone(), None).unwrap();
    let schema = json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]});
    let budget = json!({"max_steps": 5, "max_spend_usd": 1.0, "max_wallclock_s": 60.0, "max_attempts": 2});
    let env = envelope::build("t", json!({"inline": {"n": 1}}), schema, BuildOptions { budget: Some(budget), ..Default::default() })
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
    trace.push(format!("scan {}", acts[0]["action"]));
    let w2 = w1.with_id("w2").unwrap();
    let w3 = w1.with_id("w3").unwrap();
    let mut ctx2 = w2.recover(&hid).unwrap();
    assert!(w3.recover(&hid).is_err(), "one recoverer wins");
    trace.push(format!("fence {}", ctx2.fence()));
    assert!(matches!(ctx.checkpoint(&json!({})), Err(Error::StaleFence { .. })));
    trace.push(format!("resumed at {}", w2.last_checkpoint(&hid).unwrap().unwrap()["i"]));
    assert!(ctx2.note_step(6).is_err(), "budget enforced");
    trace.push(format!("scan {}", sup.scan().unwrap()[0]["action"]));
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

#[test]
fn sqlite_and_memory_backends_behave_alike() {
    let dir = tempfile::tempdir().unwrap();
    let on_sqlite = scenario(Arc::new(SqliteStore::open(dir.path()).unwrap()));
    let on_memory = scenario(Arc::new(MemStore::new()));
    assert_eq!(on_sqlite, on_memory);
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
