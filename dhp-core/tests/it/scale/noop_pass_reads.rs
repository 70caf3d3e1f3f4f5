//! Issue 21: what a supervisor pass costs follows what changed, not what
//! exists. Counted, not timed: the SQLite virtual-machine instructions of
//! the supervisor's connection (each row a statement visits costs a few;
//! an index seek costs the same at any size). The same sequence of passes
//! with nothing to do — change reads, due deadlines, the leader's renewal,
//! an incremental consistency pass — runs exactly as many instructions
//! with 2,000 running handoffs as with 200; so does a pass after ten of
//! them checkpointed again (which only moves their stall deadlines later,
//! so the pass does not read them: their old deadlines fall due first), and
//! a pass after ten of them reported a repeated activity digest (which
//! brings a stall closer, so the pass reads them).

use dhp_core::clock::ManualClock;
use dhp_core::envelope::{self, BuildOptions};
use dhp_core::lease::Lease;
use dhp_core::runner::{checkpoint_many, CheckpointItem};
use dhp_core::store::SqliteStore;
use dhp_core::{Clock, Config, Runner, Supervisor};
use serde_json::json;
use std::sync::atomic::Ordering;
use std::sync::Arc;

struct Fixture {
    _dir: tempfile::TempDir,
    runner: Runner,
    run_cfg: Config,
    store: Arc<SqliteStore>,
    sup: Supervisor,
    hand: Arc<ManualClock>,
    /// (hid, fence) of every running handoff.
    held: Vec<(String, dhp_core::Fence)>,
}

/// `n` running handoffs, each with a checkpoint (so each has a stall
/// deadline), a supervisor that made its first (full) pass, and protocol
/// time moved past the change window of the fill.
fn fixture(n: usize) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let (clock, hand) = Clock::manual();
    // Leases of 3,000 s: none runs out during the test.
    let run_cfg = Config { clock: clock.clone(), lease_interval_s: 1000.0, ..Config::default() };
    let runner = Runner::open(dir.path(), "w", run_cfg.clone()).unwrap();
    let envs: Vec<_> = (0..n)
        .map(|i| envelope::build("t", json!({"inline": {"i": i}}), json!({}), BuildOptions::default()).unwrap())
        .collect();
    let hids: Vec<String> = runner.dispatch_many(&envs).unwrap().into_iter().map(Result::unwrap).collect();
    let held: Vec<(String, dhp_core::Fence)> = runner
        .claim_many(&hids)
        .unwrap()
        .into_iter()
        .map(|c| {
            let c = c.unwrap();
            (c.hid().to_string(), c.fence())
        })
        .collect();
    let items: Vec<_> = held
        .iter()
        .map(|(hid, fence)| CheckpointItem {
            hid: hid.clone(),
            holder: "w".into(),
            fence: *fence,
            state: json!({"s": 1}),
        })
        .collect();
    for r in checkpoint_many(runner.store().as_ref(), &run_cfg, &items).unwrap() {
        r.unwrap();
    }
    let store = Arc::new(SqliteStore::open(dir.path()).unwrap());
    // The supervisor's lease TTL (300 s) sets its consistency cadence, in
    // wall or protocol time: only the protocol time the test moves can
    // make it due, however slow the machine. No stall falls due.
    let sup_cfg = Config { clock, lease_interval_s: 100.0, stall_timeout_s: 10_000.0, ..Config::default() };
    let sup = Supervisor::new(store.clone(), "sup", sup_cfg, Some(store.root().to_path_buf())).unwrap();
    assert!(sup.scan().unwrap().is_empty(), "the first (full) pass finds nothing");
    // A consistency cadence later: that pass reads the fill's rows once
    // (written since the previous one); from here on nothing changes.
    hand.advance(300.0);
    assert!(sup.scan().unwrap().is_empty());
    Fixture { _dir: dir, runner, run_cfg, store, sup, hand, held }
}

impl Fixture {
    /// VM instructions of `passes` passes one second apart and one a
    /// consistency cadence (300 s) later, none finding anything to do.
    fn steps_of_noop_passes(&self, passes: usize) -> u64 {
        let steps = self.store.count_vm_steps();
        for i in 0..=passes {
            self.hand.advance(if i == passes { 300.0 } else { 1.0 });
            assert!(self.sup.scan().unwrap().is_empty());
        }
        steps.load(Ordering::Relaxed)
    }

    /// VM instructions of one pass after the first `k` handoffs
    /// checkpointed (again) a second earlier.
    fn steps_after_checkpoints(&self, k: usize) -> u64 {
        let items: Vec<_> = self.held[..k]
            .iter()
            .map(|(hid, fence)| CheckpointItem {
                hid: hid.clone(),
                holder: "w".into(),
                fence: *fence,
                state: json!({"s": 2}),
            })
            .collect();
        for r in checkpoint_many(self.runner.store().as_ref(), &self.run_cfg, &items).unwrap() {
            r.unwrap();
        }
        self.steps_of_one_pass()
    }

    /// VM instructions of one pass after the first `k` handoffs reported
    /// the same activity digest twice, a second earlier.
    fn steps_after_digests(&self, k: usize) -> u64 {
        for (hid, fence) in &self.held[..k] {
            let lease = Lease::presented(hid, *fence).unwrap();
            for _ in 0..2 {
                self.runner.note_activity(&lease, "same").unwrap();
            }
        }
        self.steps_of_one_pass()
    }

    fn steps_of_one_pass(&self) -> u64 {
        self.hand.advance(1.0);
        let steps = self.store.count_vm_steps();
        assert!(self.sup.scan().unwrap().is_empty());
        steps.load(Ordering::Relaxed)
    }
}

#[test]
fn a_pass_reads_what_changed_whatever_the_number_of_running_handoffs() {
    let (small, big) = (fixture(200), fixture(2000));
    // Thirteen passes: leader renewals and a consistency pass among them.
    let (noop_small, noop_big) = (small.steps_of_noop_passes(12), big.steps_of_noop_passes(12));
    eprintln!("13 no-op passes: {noop_small} VM instructions at 200 running, {noop_big} at 2,000");
    assert!(noop_small > 0, "the counter counts");
    assert_eq!(noop_small, noop_big, "no-op passes read something per running handoff");
    let (cp_small, cp_big) = (small.steps_after_checkpoints(10), big.steps_after_checkpoints(10));
    eprintln!("a pass after 10 checkpoints: {cp_small} VM instructions at 200 running, {cp_big} at 2,000");
    assert_eq!(cp_small, cp_big, "a pass after ten checkpoints read something per running handoff");
    assert!(cp_small < noop_small / 13 * 2, "the re-checkpointed handoffs were not read");
    let (ten_small, ten_big) = (small.steps_after_digests(10), big.steps_after_digests(10));
    eprintln!("a pass after 10 repeated digests: {ten_small} VM instructions at 200 running, {ten_big} at 2,000");
    assert!(ten_small > noop_small / 13 * 2, "the changed handoffs were read");
    assert_eq!(ten_small, ten_big, "a pass after ten changes read something per running handoff");
}
