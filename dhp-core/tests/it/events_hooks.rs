//! The library's event hooks (issue 46): the supervisor and the runner
//! report to the observer on `Config::hooks` — one event per claim,
//! checkpoint, heartbeat, orphan, pass and end — and count the
//! supervisor's events once, in its own counters.

use dhp_core::envelope;
use dhp_core::events::{Ended, Event, Hooks, Observer, Start};
use dhp_core::supervisor::{OrphanReason, Supervisor};
use dhp_core::{Config, Runner};
use serde_json::json;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Log(Mutex<Vec<String>>);

impl Observer for Log {
    fn on(&self, e: &Event<'_>) {
        let line = match *e {
            Event::Orphaned { reason, detection } => format!("orphaned {} {}", reason.as_str(), detection.is_some()),
            Event::Pass { .. } => "pass".into(),
            Event::LeaseRenewed => "renewed".into(),
            Event::AttemptStarted { fence, how, .. } => format!("started {} {fence}", how.as_str()),
            Event::Checkpointed { fence, seq, .. } => format!("checkpoint {fence} {seq}"),
            Event::AttemptEnded { fence, how, .. } => format!("ended {fence} {how:?}"),
            Event::AttemptDied(d) => format!("died {} {}", d.fence, d.checkpoints.len()),
        };
        self.0.lock().unwrap().push(line);
    }

    fn wants_deaths(&self) -> bool {
        true
    }
}

#[test]
fn every_event_reaches_the_observer_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(Log::default());
    let cfg = Config { hooks: Hooks::new(log.clone()), ..Config::default() };
    let w1 = Runner::open(dir.path(), "w1", cfg.clone()).unwrap();
    let env = envelope::build("t", json!({"inline": {"n": 1}}), json!({}), Default::default()).unwrap();
    let hid = w1.dispatch(&env).unwrap();
    let ctx = w1.claim(&hid).unwrap();
    ctx.checkpoint(&json!({"n": 1})).unwrap();
    ctx.heartbeat().unwrap();
    dhp_testkit::store::expire_lease(&w1, &hid).unwrap();
    let sup = Supervisor::open(dir.path(), "sup1", cfg.clone()).unwrap();
    assert_eq!(sup.scan().unwrap().len(), 1);
    let w2 = w1.with_id("w2").unwrap();
    let mut ctx2 = w2.recover(&hid).unwrap();
    ctx2.complete(&json!({})).unwrap();
    let got = log.0.lock().unwrap().clone();
    assert_eq!(
        got,
        [
            "started claim 0",
            "checkpoint 0 0",
            "renewed",
            "orphaned lease-expired true",
            "died 0 1",
            "pass",
            "started recover 2",
            "ended 2 Completed",
        ],
    );
    // The supervisor counted its orphan once, by reason, in its counters.
    let m = &sup.metrics;
    let orphans: Vec<u64> = OrphanReason::ALL.iter().map(|r| m.orphans[r.index()].load(Ordering::Relaxed)).collect();
    assert_eq!((orphans, m.scans.load(Ordering::Relaxed)), (vec![1, 0, 0], 1));
    assert_eq!(sup.metrics.snapshot()["orphans"], 1);
    let _ = (Start::Claim, Ended::Released);
}

#[test]
fn without_an_observer_nothing_is_gathered() {
    // No observer: a supervisor does not read a dead attempt's checkpoints.
    assert!(!Hooks::default().wants_deaths() && !Hooks::default().active());
    assert_eq!(Config::default(), Config { hooks: Hooks::new(Arc::new(Log::default())), ..Config::default() });
}
