//! Small synthetic rounds built with dhp-core directly (no processes, no
//! timing), for the checker's rule tests: a store, a history and a peer
//! log that a test writes line by line, then checks.

use dhp_chaos::check::{check_round, RoundReport};
use dhp_core::envelope::{self, Budget, BuildOptions};
use dhp_core::supervisor::Supervisor;
use dhp_core::transport::log as tlog;
use dhp_core::{Config, Runner, TaskContext};
use dhp_testkit::store as testing;
use dhp_workload::census;
use serde_json::{json, Value};
use std::path::PathBuf;

pub const LO: u64 = 1000;
pub const HI: u64 = 1500;
pub const CHUNK: u64 = 100;

pub struct Synth {
    _tmp: tempfile::TempDir,
    pub dir: PathBuf,
    pub runner: Runner,
    pub hid: String,
    pub hist: super::SplitHistory,
    pub pid: i64,
}

impl Synth {
    pub fn new() -> Synth {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        for d in ["store", "transport", "procs"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        let runner = Runner::open(dir.join("store"), "chaos", Config::default()).unwrap();
        let budget = Budget { max_steps: 1000, max_spend_usd: 1.0, max_wallclock_s: 3600.0, max_attempts: 10 };
        let env = envelope::build(
            census::KIND,
            census::inputs(LO, HI, CHUNK),
            census::output_schema(),
            BuildOptions { budget: Some(budget.to_value()), ..Default::default() },
        )
        .unwrap();
        let hid = runner.dispatch(&env).unwrap();
        let t0 = envelope::now();
        let meta = json!({
            "config": {"seed": 1, "round": 0, "workers": {"kind": "builtin"}, "supervisors": {"kind": "builtin"},
                       "replay": "synthetic", "timing": {"leader_ttl_s": 5.0, "supervisor_scan_s": 1.0}},
            "hids": [hid], "t0": t0, "t_faults_end": t0, "t_end": t0,
        });
        std::fs::write(dir.join("round.json"), serde_json::to_vec(&meta).unwrap()).unwrap();
        let hist = super::SplitHistory::open(&dir);
        tlog::ship_envelope(
            &dir.join("transport").join(format!("{hid}.log")),
            &runner.envelope_bare(&hid).unwrap(),
            &Config::default(),
        )
        .unwrap();
        Synth { _tmp: tmp, dir, runner, hid, hist, pid: 100 }
    }

    pub fn line(&mut self, process: &str, op: &str, ty: &str, extra: Value) {
        self.line_at(envelope::now(), process, op, ty, extra);
    }

    /// A history line stamped `t` (a clock that is a little off).
    pub fn line_at(&mut self, t: f64, process: &str, op: &str, ty: &str, extra: Value) {
        let mut v = json!({"t": t, "pid": self.pid_of(process), "process": process, "op": op, "type": ty});
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        self.hist.write(&v);
        std::thread::sleep(std::time::Duration::from_millis(2));
    }

    pub fn pid_of(&self, process: &str) -> i64 {
        if process == "chaos" {
            1
        } else {
            self.pid + process.bytes().map(i64::from).sum::<i64>()
        }
    }

    pub fn spawn(&mut self, name: &str, imp: &str) {
        let hid = self.hid.clone();
        self.line("chaos", "spawn", "event", json!({"name": name, "role": "worker", "impl": imp, "hid": hid}));
    }

    pub fn start(&mut self, name: &str, recover: bool) -> TaskContext {
        let hid = self.hid.clone();
        let op = if recover { "recover" } else { "claim" };
        self.line(name, op, "invoke", json!({"hid": hid, "holder": name}));
        let r = self.runner.with_id(name).unwrap();
        let ctx = if recover { r.recover(&hid).unwrap() } else { r.claim(&hid).unwrap() };
        self.line(name, op, "ok", json!({"hid": hid, "holder": name, "fence": ctx.fence()}));
        ctx
    }

    /// Worker `name` (`imp`: builtin or python) is spawned and claims the handoff.
    pub fn claimed_by(&mut self, name: &str, imp: &str) -> TaskContext {
        self.spawn(name, imp);
        self.start(name, false)
    }

    /// Worker `name` is spawned, recovers the orphan, works from `from` to
    /// the end and completes.
    pub fn finished_by(&mut self, name: &str, imp: &str, from: u64) -> TaskContext {
        self.spawn(name, imp);
        let mut ctx = self.start(name, true);
        self.work(name, &ctx, from, HI);
        self.complete(name, &mut ctx);
        ctx
    }

    /// A checkpoint line of `name`'s history (`ty`: invoke, ok, fail) for
    /// the chunk ending at `next_n`, with `extra` fields (seq, error).
    pub fn checkpoint_line(&mut self, name: &str, ty: &str, fence: i64, next_n: u64, extra: Value) {
        let mut v = json!({"hid": self.hid, "holder": name, "fence": fence, "next_n": next_n});
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        self.line(name, "checkpoint", ty, v);
    }

    /// The harness's record of a fault on worker `victim`, with `extra` fields.
    pub fn fault(&mut self, victim: &str, kind: &str, signal: &str, extra: Value) {
        let mut v = json!({"kind": kind, "signal": signal, "victim": victim, "role": "worker", "hid": self.hid});
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        self.line("chaos", "fault", "event", v);
    }

    /// The store, opened behind the runner's back (to break it).
    pub fn raw_store(&self) -> dhp_core::store::SqliteStore {
        dhp_core::store::SqliteStore::open(self.dir.join("store")).unwrap()
    }

    /// Insert checkpoint `seq` with `state` straight into the store, past
    /// any fence check (what a broken worker would do).
    pub fn write_unfenced(&self, seq: i64, state: &Value) {
        let (text, hash) = dhp_core::json::state_text_and_hash(state).unwrap();
        self.raw_store()
            .execute_raw(
                "INSERT INTO checkpoints (hid, seq, state_json, state_hash, at) VALUES (?1, ?2, ?3, ?4, 'x')",
                &[&self.hid, &seq, &text, &hash],
            )
            .unwrap();
    }

    pub fn state(next: u64) -> Value {
        let (c, s) = census::chunk(LO, next);
        json!({"next_n": next, "count": c, "total": s})
    }

    /// Checkpoint chunks up to `upto` (exclusive of already done ones), recorded and shipped.
    pub fn work(&mut self, name: &str, ctx: &TaskContext, from: u64, upto: u64) {
        let mut n = from;
        while n < upto {
            n += CHUNK;
            let st = Self::state(n);
            self.checkpoint_line(name, "invoke", ctx.fence().get(), n, json!({}));
            let seq = ctx.checkpoint(&st).unwrap();
            self.checkpoint_line(name, "ok", ctx.fence().get(), n, json!({"seq": seq}));
            self.ship(seq, &st);
        }
    }

    /// Ship checkpoint `seq` to the peer's log.
    pub fn ship(&self, seq: i64, state: &Value) {
        let log = self.dir.join("transport").join(format!("{}.log", self.hid));
        tlog::ship_checkpoint(&log, seq, state, &Config::default()).unwrap();
    }

    pub fn complete(&mut self, name: &str, ctx: &mut TaskContext) {
        let hid = self.hid.clone();
        let result = census::expected(LO, HI, CHUNK);
        self.line(name, "complete", "invoke", json!({"hid": hid, "holder": name, "fence": ctx.fence()}));
        ctx.complete(&result).unwrap();
        self.line(name, "complete", "ok", json!({"hid": hid, "holder": name, "fence": ctx.fence()}));
    }

    /// Lease runs out, a supervisor orphans it (recorded like `dhp supervisor --history`).
    pub fn orphan(&mut self) {
        testing::expire_lease(&self.runner, &self.hid).unwrap();
        let sup = Supervisor::open(self.dir.join("store"), "sup1", Config::default()).unwrap();
        for a in sup.scan().unwrap() {
            self.line("sup1", "supervise", "ok", a.to_json());
        }
    }

    /// [`Synth::orphan`], its record stamped `t`.
    pub fn orphan_stamped(&mut self, t: f64) {
        testing::expire_lease(&self.runner, &self.hid).unwrap();
        let sup = Supervisor::open(self.dir.join("store"), "sup1", Config::default()).unwrap();
        for a in sup.scan().unwrap() {
            self.line_at(t, "sup1", "supervise", "ok", a.to_json());
        }
    }

    pub fn check(&self) -> RoundReport {
        let r = check_round(&self.dir).unwrap();
        // messages are for people: no Rust `Debug` of an Option
        for i in &r.invariants {
            for m in i.violations.iter().chain(&i.known).chain(&i.notes) {
                assert!(!m.contains("Some(") && !m.contains("None"), "[{}] {m}", i.name);
            }
        }
        r
    }
}

pub fn violations(r: &RoundReport, inv: &str) -> Vec<String> {
    r.invariants.iter().find(|i| i.name == inv).map(|i| i.violations.clone()).unwrap_or_default()
}

pub fn all_violations(r: &RoundReport) -> Vec<String> {
    r.invariants.iter().flat_map(|i| i.violations.iter().map(move |v| format!("[{}] {v}", i.name))).collect()
}

/// claim by w1 (3 chunks), orphan, recover by w2, finish.
pub fn recovered_run(s: &mut Synth) -> (TaskContext, TaskContext) {
    let (c1, mut c2) = replaced_run(s);
    s.complete("w2", &mut c2);
    (c1, c2)
}

/// [`recovered_run`] up to w2's complete: w2 has done every chunk.
pub fn replaced_run(s: &mut Synth) -> (TaskContext, TaskContext) {
    let c1 = s.claimed_by("w1", "builtin");
    s.work("w1", &c1, LO, LO + 300);
    s.orphan();
    s.spawn("w2", "builtin");
    let c2 = s.start("w2", true);
    s.work("w2", &c2, LO + 300, HI);
    (c1, c2)
}
