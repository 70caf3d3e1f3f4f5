//! The operations of the side-by-side comparison, run on dhp-core. Each
//! returns a rate; `benches/ref_bench.py` measures the same operation on the
//! reference with the same sizes, keys and units.

use crate::fixture::{self, bench_config, CheckpointBed};
use crate::group::{self, GroupCommitter, Item};
use crate::measure::{self, rate, rate_timed};
use crate::tcp::{ShipBed, TcpServer};
use dhp_core::store::SqliteStore;
use dhp_core::transport::log;
use dhp_core::transport::net::ShipMode;
use dhp_core::{json, Config, Lease, Result, Runner, Supervisor};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

/// The fence of a first claim, as the fixtures' items present it.
const F0: dhp_core::Fence = dhp_core::Fence::FIRST;

/// How much of everything to run.
#[derive(Debug, Clone)]
pub struct Sizes {
    /// Small sizes (`--quick`): a smoke run, not a measurement.
    pub quick: bool,
    /// Rounds of each measurement (the median is reported).
    pub rounds: usize,
    /// Envelopes built per round.
    pub build_iters: usize,
    /// Hashes of a 1 KiB state per round.
    pub hash_1k_iters: usize,
    /// Hashes of a 100 KiB state per round.
    pub hash_100k_iters: usize,
    /// Dispatches per round.
    pub dispatch_iters: usize,
    /// Claims per round.
    pub claim_iters: usize,
    /// Checkpoint depths (earlier checkpoints) to measure a checkpoint at.
    pub ckpt_depths: Vec<i64>,
    /// Checkpoints per round.
    pub ckpt_iters: usize,
    /// Rounds of the checkpoint measurement.
    pub ckpt_rounds: usize,
    /// Batch sizes of the group-commit rows.
    pub group_batches: Vec<usize>,
    /// Thread counts of the group-commit rows.
    pub group_threads: Vec<usize>,
    /// Checkpoints per group-commit row.
    pub group_iters: usize,
    /// Recover races run.
    pub recover_races: usize,
    /// Runners in each recover race.
    pub racers: usize,
    /// Lines in the ingested transport log.
    pub ingest_lines: usize,
    /// Ingests per round.
    pub ingest_reps: usize,
    /// Handoffs in the store a supervisor scan walks.
    pub scan_handoffs: usize,
    /// Scans per round.
    pub scan_reps: usize,
    /// fsyncs per probe round.
    pub fsync_n: usize,
    /// Checkpoints shipped per round.
    pub ship_iters: usize,
    /// Operations per transaction for the batched dispatch/claim rows.
    pub batch: usize,
}

impl Sizes {
    /// The sizes of the published table.
    pub fn full() -> Self {
        Sizes {
            quick: false,
            rounds: 3,
            build_iters: 20_000,
            hash_1k_iters: 20_000,
            hash_100k_iters: 300,
            dispatch_iters: 1_000,
            claim_iters: 1_000,
            ckpt_depths: vec![100, 1_000, 2_000, 10_000, 100_000],
            ckpt_iters: 500,
            ckpt_rounds: 5,
            group_batches: vec![1, 8, 32, 128],
            group_threads: vec![8, 32],
            group_iters: 200,
            recover_races: 40,
            racers: 8,
            ingest_lines: 10_000,
            ingest_reps: 3,
            scan_handoffs: 10_000,
            scan_reps: 5,
            fsync_n: 500,
            ship_iters: 2_000,
            batch: 32,
        }
    }

    /// A smoke run: every code path, tiny sizes (seconds, even unoptimized).
    pub fn quick() -> Self {
        Sizes {
            quick: true,
            rounds: 1,
            build_iters: 50,
            hash_1k_iters: 50,
            hash_100k_iters: 2,
            dispatch_iters: 10,
            claim_iters: 10,
            ckpt_depths: vec![100, 1_000],
            ckpt_iters: 10,
            ckpt_rounds: 1,
            group_batches: vec![1, 8],
            group_threads: vec![4],
            group_iters: 5,
            recover_races: 2,
            racers: 8,
            ingest_lines: 200,
            ingest_reps: 1,
            scan_handoffs: 200,
            scan_reps: 1,
            fsync_n: 50,
            ship_iters: 20,
            batch: 4,
        }
    }
}

fn op(rate: f64, unit: &str, detail: impl Into<String>) -> Value {
    json!({"rate": rate, "unit": unit, "detail": detail.into()})
}

/// Everything the suite needs on disk, shared with the reference run.
#[derive(Debug, Clone)]
pub struct Fixtures {
    /// Scratch space for fresh stores (same file system as the fixtures).
    pub work: PathBuf,
    /// The transport log to ingest.
    pub log: PathBuf,
    /// A store with `scan_handoffs` running handoffs, for our scan.
    pub scan_root: PathBuf,
}

/// Make the shared fixtures in `dir`: `ingest.log`, and the scan store in
/// `scan-rs/` and an identical copy in `scan-py/` for the reference.
pub fn make_fixtures(dir: &Path, s: &Sizes) -> Result<Fixtures> {
    let mk = |p: &Path| std::fs::create_dir_all(p).map_err(|e| fixture::io_err(p, e));
    mk(dir)?;
    let work = dir.join("work");
    mk(&work)?;
    let log = dir.join("ingest.log");
    fixture::write_log(&log, s.ingest_lines)?;
    let scan_root = dir.join("scan-rs");
    let _ = std::fs::remove_dir_all(&scan_root);
    fixture::scan_store(&scan_root, s.scan_handoffs)?;
    let copy = dir.join("scan-py");
    let _ = std::fs::remove_dir_all(&copy);
    mk(&copy)?;
    let (from, to) = (scan_root.join("dhp.sqlite3"), copy.join("dhp.sqlite3"));
    std::fs::copy(&from, &to).map_err(|e| fixture::io_err(&to, e))?;
    Ok(Fixtures { work, log, scan_root })
}

/// Run every operation on dhp-core. `progress` gets a line per step.
pub fn run_ours(s: &Sizes, fx: &Fixtures, mut progress: impl FnMut(&str)) -> Result<Value> {
    let cfg = bench_config();
    let work = &fx.work;
    let mut ops = Ops { map: Map::new(), t0: Instant::now(), progress: &mut progress };
    let ckpts = machine_limits(s, work, &mut ops)?;
    pure_cpu(s, &mut ops)?;
    store_ops(s, work, &cfg, &mut ops)?;
    for (d, r) in ckpts {
        let detail = format!(
            "Runner::checkpoint after {d} earlier checkpoints (median of {} rounds of {})",
            s.ckpt_rounds, s.ckpt_iters
        );
        ops.step(&format!("checkpoint_{d}"), op(r, "ckpt/s", detail));
    }
    group_commit(s, work, &cfg, &mut ops)?;
    recover_races(s, work, &mut ops)?;
    ingest(s, fx, &cfg, &mut ops)?;
    tcp_ship(s, work, &mut ops)?;
    scan(s, fx, &cfg, &mut ops)?;

    let load = measure::loadavg();
    // Scratch stores are removed only now: deleting files mid-run makes the
    // file system discard blocks (a `discard` mount) under the next fsyncs.
    clean_scratch(work);
    Ok(json!({"impl": "dhp-rs", "quick": s.quick, "ops": ops.map, "loadavg_end": load}))
}

/// The operations measured so far, each reported as it is added.
struct Ops<'a> {
    map: Map<String, Value>,
    t0: Instant,
    progress: &'a mut dyn FnMut(&str),
}

impl Ops<'_> {
    fn step(&mut self, name: &str, v: Value) {
        (self.progress)(&format!(
            "[{:6.1}s] {name}: {:.1} {}",
            self.t0.elapsed().as_secs_f64(),
            v["rate"].as_f64().unwrap_or(0.0),
            v["unit"].as_str().unwrap_or("")
        ));
        self.map.insert(name.to_string(), v);
    }
}

/// The machine's limits: raw fsync and checkpoints at every depth,
/// interleaved round by round so that all of them see the same disk and the
/// same background load. Returns each depth's checkpoint rate.
fn machine_limits(s: &Sizes, work: &Path, ops: &mut Ops<'_>) -> Result<Vec<(i64, f64)>> {
    let (f, c, ckpts) = interleaved_checkpoints(work, &s.ckpt_depths, s.ckpt_rounds, s.ckpt_iters, s.fsync_n)?;
    ops.step(
        "fsync_raw",
        op(f, "fsync/s", "100-byte append + fdatasync, median of rounds interleaved with the checkpoint rounds"),
    );
    ops.step(
        "sqlite_commit",
        op(c, "commits/s", "1-row INSERT, BEGIN IMMEDIATE, WAL, synchronous=FULL; interleaved likewise"),
    );
    Ok(ckpts)
}

/// Calls over which an operation's WAL frames per commit are counted.
const FRAME_CALLS: usize = 100;

/// Untimed calls first: frames are counted on a store of some size.
const WARM_CALLS: usize = 500;

/// `call` and the commit floor at its own page count (bare commits that each
/// change as many pages as one call wrote WAL frames), in `s.rounds` rounds
/// of `iters` calls then `iters` commits: both see the disk of the same
/// moment. Returns the median call rate, the median floor and the pages.
fn paired_with_floor(
    s: &Sizes,
    work: &Path,
    frames: f64,
    iters: usize,
    mut call: impl FnMut(usize) -> Result<()>,
) -> Result<(f64, f64, usize)> {
    let pages = (frames.round() as usize).max(1);
    let mut probe = measure::CommitProbe::with_pages(work, pages)?;
    probe.rate(iters.min(200))?;
    let (mut calls, mut floor, mut k) = (Vec::new(), Vec::new(), 0);
    for _ in 0..s.rounds.max(1) {
        calls.push(measure::rate(1, iters, |i| call(k + i))?);
        k += iters.max(1);
        floor.push(probe.rate(iters)?);
    }
    Ok((measure::median(calls), measure::median(floor), pages))
}

/// The floor of [`paired_with_floor`] as its own row (`sqlite_commit_pages_<key>`).
fn floor_step(ops: &mut Ops<'_>, key: &str, floor: f64, pages: usize) {
    let detail = format!(
        "{pages}-page commit (one row into each of {pages} tables), WAL, synchronous=FULL: {key}'s pages, \
         in rounds interleaved with {key}'s"
    );
    let mut v = op(floor, "commits/s", detail);
    v["pages"] = json!(pages);
    ops.step(&format!("sqlite_commit_pages_{key}"), v);
}

/// Pure CPU: envelopes and canonical hashes.
fn pure_cpu(s: &Sizes, ops: &mut Ops<'_>) -> Result<()> {
    let r = rate(s.rounds, s.build_iters, |i| fixture::sdk_envelope(i as u64).map(drop))?;
    ops.step("envelope_build", op(r, "ops/s", "build SDK envelope incl. input_hash, trace_id, handoff_id"));
    for (name, bytes, iters) in
        [("canonical_hash_1k", 1_000, s.hash_1k_iters), ("canonical_hash_100k", 100_000, s.hash_100k_iters)]
    {
        let st = fixture::state_of_size(bytes);
        let len = json::canonical(&st)?.len();
        let r = rate(s.rounds, iters, |_| {
            std::hint::black_box(json::sha256_hex(&json::canonical(std::hint::black_box(&st))?));
            Ok(())
        })?;
        ops.step(name, op(r, "ops/s", format!("sha256(canonical(state)), {len} bytes")));
    }
    Ok(())
}

/// Store operations (durable): dispatch and claim, one per commit and with
/// group commit (`batch` per transaction).
fn store_ops(s: &Sizes, work: &Path, cfg: &Config, ops: &mut Ops<'_>) -> Result<()> {
    {
        let root = fixture::fresh_root(work, "dispatch");
        let r0 = Runner::open(&root, "w1", cfg.clone())?;
        let dispatch = |i: usize| r0.dispatch(&fixture::sdk_envelope(i as u64)?).map(drop);
        (0..WARM_CALLS).try_for_each(dispatch)?;
        let frames = measure::wal_frames_per(&root, FRAME_CALLS, |i| dispatch(WARM_CALLS + i))?;
        let (r, floor, pages) =
            paired_with_floor(s, work, frames, s.dispatch_iters, |i| dispatch(WARM_CALLS + FRAME_CALLS + i))?;
        let mut v = op(r, "ops/s", "SDK dispatch: build envelope + verify + insert (1 commit)");
        v["wal_frames"] = json!(frames);
        ops.step("dispatch", v);
        floor_step(ops, "dispatch", floor, pages);
    }
    {
        let root = fixture::fresh_root(work, "claim");
        let r0 = Runner::open(&root, "w1", cfg.clone())?;
        let n = WARM_CALLS + FRAME_CALLS + s.rounds.max(1) * s.claim_iters.max(1);
        let hids = fixture::bulk_dispatch(&r0, 0, n as u64)?;
        let claim = |i: usize| r0.claim(&hids[i]).map(drop);
        (0..WARM_CALLS).try_for_each(claim)?;
        let frames = measure::wal_frames_per(&root, FRAME_CALLS, |i| claim(WARM_CALLS + i))?;
        let (r, floor, pages) =
            paired_with_floor(s, work, frames, s.claim_iters, |i| claim(WARM_CALLS + FRAME_CALLS + i))?;
        let mut v = op(r, "ops/s", "claim a pending handoff (1 commit)");
        v["wal_frames"] = json!(frames);
        ops.step("claim", v);
        floor_step(ops, "claim", floor, pages);
    }
    let b = s.batch;
    let root = fixture::fresh_root(work, "batch");
    let r0 = Runner::open(&root, "w1", cfg.clone())?;
    let mut next = 10_000_000u64;
    let mut made: Vec<String> = Vec::new();
    let r = rate(s.rounds, s.dispatch_iters.div_ceil(b), |_| {
        let envs: Vec<Value> = (next..next + b as u64).map(fixture::sdk_envelope).collect::<Result<_>>()?;
        next += b as u64;
        for h in group::dispatch_many(&r0, &envs)? {
            made.push(h?);
        }
        Ok(())
    })? * b as f64;
    ops.step("dispatch_batched", op(r, "ops/s", format!("build + group::dispatch_many, {b} per transaction")));
    let mut chunks = made.chunks(b);
    let r = rate(s.rounds, s.dispatch_iters.div_ceil(b), |_| {
        let c = chunks.next().expect("enough dispatched handoffs");
        for f in group::claim_many(&r0, "w1", c)? {
            f?;
        }
        Ok(())
    })? * b as f64;
    ops.step("claim_batched", op(r, "ops/s", format!("group::claim_many, {b} per transaction")));
    drop(r0);
    Ok(())
}

/// Group commit: checkpoint_many at each batch size, then worker threads
/// with and without a GroupCommitter; the best total too.
fn group_commit(s: &Sizes, work: &Path, cfg: &Config, ops: &mut Ops<'_>) -> Result<()> {
    let mut best = (0.0f64, String::new());
    let mut group = Map::new();
    for &b in &s.group_batches {
        let (total, label) = group_batch(s, work, cfg, b)?;
        group.insert(format!("batch_{b}"), op(total, "ckpt/s", label.clone()));
        if total > best.0 {
            best = (total, label);
        }
    }
    for &t in &s.group_threads {
        for grouped in [false, true] {
            let (total, label) = group_threads(work, cfg, t, s.group_iters, grouped)?;
            group.insert(
                format!("threads_{t}_{}", if grouped { "grouped" } else { "plain" }),
                op(total, "ckpt/s", label.clone()),
            );
            if grouped && total > best.0 {
                best = (total, label);
            }
        }
    }
    ops.step("group_commit_best", op(best.0, "ckpt/s", best.1));
    ops.map.insert("group_commit".into(), Value::Object(group));
    Ok(())
}

/// checkpoint_many over `b` handoffs per transaction: the total rate and its label.
fn group_batch(s: &Sizes, work: &Path, cfg: &Config, b: usize) -> Result<(f64, String)> {
    let root = fixture::fresh_root(work, "group");
    let r0 = Runner::open(&root, "w1", cfg.clone())?;
    let hids = fixture::bulk_dispatch(&r0, 0, b as u64)?;
    for h in &hids {
        r0.claim(h)?;
    }
    let mut n = 0u64;
    let tx_rate = rate(s.rounds, s.group_iters, |_| {
        let items: Vec<Item> = hids
            .iter()
            .map(|h| Item { hid: h.clone(), holder: "w1".into(), fence: F0, state: fixture::small_state(n) })
            .collect();
        n += 1;
        for res in group::checkpoint_many(r0.store().as_ref(), cfg, &items)? {
            res?;
        }
        Ok(())
    })?;
    let total = tx_rate * b as f64;
    let label = format!("checkpoint_many, {b} handoff{} per transaction", if b == 1 { "" } else { "s" });
    drop(r0);
    Ok((total, label))
}

/// `t` worker threads checkpointing `iters` times each, through a
/// GroupCommitter or each on its own: the total rate and its label.
fn group_threads(work: &Path, cfg: &Config, t: usize, iters: usize, grouped: bool) -> Result<(f64, String)> {
    let root = fixture::fresh_root(work, "gthreads");
    let r0 = Runner::open(&root, "w1", cfg.clone())?;
    let hids = fixture::bulk_dispatch(&r0, 0, t as u64)?;
    for h in &hids {
        r0.claim(h)?;
    }
    let (gc, stats) = GroupCommitter::start(r0.store().clone(), cfg.clone(), 1024);
    let start = Instant::now();
    let failures = Mutex::new(Vec::<String>::new());
    std::thread::scope(|sc| {
        for h in &hids {
            let handle = gc.handle();
            let (r0, failures) = (&r0, &failures);
            sc.spawn(move || {
                for k in 0..iters {
                    let st = fixture::small_state(k as u64);
                    let res = if grouped {
                        handle.checkpoint(Item { hid: h.clone(), holder: "w1".into(), fence: F0, state: st })
                    } else {
                        Lease::presented(h, 0).and_then(|l| r0.checkpoint(&l, &st))
                    };
                    if let Err(e) = res {
                        failures.lock().unwrap_or_else(|p| p.into_inner()).push(e.to_string());
                        return;
                    }
                }
            });
        }
    });
    let el = start.elapsed().as_secs_f64();
    drop(gc);
    let fails = failures.into_inner().unwrap_or_else(|p| p.into_inner());
    assert!(fails.is_empty(), "group commit workers failed: {fails:?}");
    let total = (t * iters) as f64 / el;
    let st = *stats.lock().unwrap_or_else(|p| p.into_inner());
    let label = if grouped {
        format!(
            "{t} worker threads, GroupCommitter (avg {:.1} ckpt per fsync)",
            st.checkpoints as f64 / st.transactions.max(1) as f64
        )
    } else {
        format!("{t} worker threads, Runner::checkpoint each (no grouping)")
    };
    drop(r0);
    Ok((total, label))
}

/// The recover race, and what limits it: the same CAS in raw SQL, SQLite's
/// busy-wait ladder vs a 100 µs busy handler.
fn recover_races(s: &Sizes, work: &Path, ops: &mut Ops<'_>) -> Result<()> {
    let r = recover_race(work, s.racers, s.recover_races)?;
    ops.step("recover_race", op(r, "races/s", format!("{} racers, own connection each; exactly one wins", s.racers)));
    for (key, fine, label) in [
        (
            "lock_race_default",
            false,
            "recover CAS in raw SQL, 8 connections, busy_timeout (SQLite's 1, 2, 5, 10 … ms sleeps)",
        ),
        ("lock_race_fine", true, "recover CAS in raw SQL, 8 connections, 100 µs busy handler"),
    ] {
        let r = measure::lock_race_rate(work, s.racers, s.recover_races, fine)?;
        ops.step(key, op(r, "races/s", label));
    }
    Ok(())
}

/// Ingest of the fixture log into a fresh store.
fn ingest(s: &Sizes, fx: &Fixtures, cfg: &Config, ops: &mut Ops<'_>) -> Result<()> {
    let r = rate_timed(1, s.ingest_reps, |_| {
        let root = fixture::fresh_root(&fx.work, "ingest");
        let store = SqliteStore::open(&root)?;
        let t = Instant::now();
        let rep = log::ingest(&store, &fx.log, cfg)?;
        let el = t.elapsed();
        assert_eq!(rep.checkpoints_new, s.ingest_lines, "ingest fixture");
        drop(store);
        Ok(el)
    })?;
    ops.step(
        "ingest",
        op(
            r * s.ingest_lines as f64,
            "lines/s",
            format!("log::ingest of a {}-line log into a fresh store", s.ingest_lines),
        ),
    );
    Ok(())
}

/// TCP shipping, synchronous and asynchronous, to a server that must have
/// appended every shipped line.
fn tcp_ship(s: &Sizes, work: &Path, ops: &mut Ops<'_>) -> Result<()> {
    let dir = fixture::fresh_root(work, "tcp");
    let server = TcpServer::start(&dir.join("server-logs"))?;
    let mut bed = ShipBed::new(server.addr(), ShipMode::Sync, dir.join("sync-buffer.log"), 1)?;
    let r = rate(s.rounds, s.ship_iters, |_| bed.ship_next())?;
    ops.step(
        "ship_tcp_sync",
        op(
            r,
            "lines/s",
            "TcpShipper, ShipMode::Sync: hash + line + ship, returns on the server's ack; local buffer log",
        ),
    );
    let mut abed = ShipBed::new(server.addr(), ShipMode::Async { max_lag: 256 }, dir.join("async-buffer.log"), 2)?;
    let n = s.ship_iters * 4;
    let r = rate_timed(s.rounds, 1, |_| {
        let t = Instant::now();
        for _ in 0..n {
            abed.ship_next()?;
        }
        abed.flush()?;
        Ok(t.elapsed())
    })? * n as f64;
    ops.step(
        "ship_tcp_async",
        op(
            r,
            "lines/s",
            format!("TcpShipper, ShipMode::Async{{max_lag: 256}}: {n} lines then flush (all acked); local buffer log"),
        ),
    );
    let shipped = (bed.shipped() + abed.shipped()) as u64;
    drop(bed);
    drop(abed);
    let stats = server.stop()?;
    assert_eq!(stats.checkpoints_appended, shipped, "server appended every shipped line: {stats:?}");
    Ok(())
}

/// The supervisor's scan over the fixture's running handoffs (none needing action).
fn scan(s: &Sizes, fx: &Fixtures, cfg: &Config, ops: &mut Ops<'_>) -> Result<()> {
    let sup = Supervisor::open(&fx.scan_root, "bench-sup", cfg.clone())?;
    let acts = sup.scan()?;
    assert!(acts.is_empty(), "scan fixture should need no action: {acts:?}");
    let r = rate(1, s.scan_reps, |_| sup.scan().map(drop))?;
    ops.step(
        "scan",
        op(
            r,
            "scans/s",
            format!(
                "Supervisor::scan over {} running handoffs ({:.0} handoffs/s)",
                s.scan_handoffs,
                r * s.scan_handoffs as f64
            ),
        ),
    );
    Ok(())
}

/// Remove everything under the scratch directory.
pub fn clean_scratch(work: &Path) {
    if let Ok(rd) = std::fs::read_dir(work) {
        for e in rd.flatten() {
            let p = e.path();
            let _ = if p.is_dir() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
        }
    }
}

/// Median raw fsync rate, median SQLite commit rate, and each depth's
/// median checkpoint rate.
pub type Interleaved = (f64, f64, Vec<(i64, f64)>);

/// Beds with `depths` earlier checkpoints, then `rounds` rounds, each of
/// `fsync_n` raw fsyncs followed by `iters` checkpoints on every bed (the
/// bed order rotates from round to round), plus as many raw 1-row SQLite
/// commits. Returns the median fsync rate, the median commit rate and each
/// depth's median checkpoint rate.
pub fn interleaved_checkpoints(
    work: &Path,
    depths: &[i64],
    rounds: usize,
    iters: usize,
    fsync_n: usize,
) -> Result<Interleaved> {
    // Each store's WAL is warmed on a second handoff (ref_bench.py does the same).
    let mut beds: Vec<CheckpointBed> =
        depths.iter().map(|&d| CheckpointBed::warmed(work, d, iters.min(300))).collect::<Result<_>>()?;
    let mut probe = measure::FsyncProbe::new(work)?;
    probe.rate(fsync_n.min(100))?;
    let mut commit = measure::CommitProbe::new(work)?;
    commit.rate(iters.min(200))?;
    let (mut fs, mut cs) = (Vec::new(), Vec::new());
    let mut per: Vec<Vec<f64>> = vec![Vec::new(); beds.len()];
    let n = beds.len();
    for round in 0..rounds.max(1) {
        fs.push(probe.rate(fsync_n)?);
        cs.push(commit.rate(iters)?);
        for k in 0..n {
            let i = (round + k) % n;
            let bed = &mut beds[i];
            per[i].push(rate(1, iters, |_| bed.checkpoint().map(drop))?);
        }
    }
    let out = depths.iter().zip(per).map(|(&d, r)| (d, measure::median(r))).collect();
    Ok((measure::median(fs), measure::median(cs), out))
}

/// `races` recover races of `racers` threads, each with its own store
/// connection, on freshly orphaned handoffs. Returns races per second
/// (time from the start barrier until every racer returned).
pub fn recover_race(work: &Path, racers: usize, races: usize) -> Result<f64> {
    let root = fixture::fresh_root(work, "recover");
    let cfg = bench_config();
    let owner = Runner::open(&root, "w0", cfg.clone())?;
    let sup = Supervisor::open(&root, "sup", cfg.clone())?;
    let runners: Vec<Runner> =
        (0..racers).map(|k| Runner::open(&root, &format!("r{k}"), cfg.clone())).collect::<Result<_>>()?;
    let start = Arc::new(Barrier::new(racers + 1));
    let end = Arc::new(Barrier::new(racers + 1));
    let slot = Arc::new(Mutex::new(None::<String>));
    let wins = Arc::new(Mutex::new(Vec::<usize>::new()));
    let mut total = Duration::ZERO;
    std::thread::scope(|sc| -> Result<()> {
        for (k, r) in runners.iter().enumerate() {
            let (start, end, slot, wins) = (start.clone(), end.clone(), slot.clone(), wins.clone());
            sc.spawn(move || loop {
                start.wait();
                let hid = slot.lock().unwrap_or_else(|p| p.into_inner()).clone();
                let Some(hid) = hid else { break };
                let won = r.recover(&hid).is_ok();
                if won {
                    wins.lock().unwrap_or_else(|p| p.into_inner()).push(k);
                }
                end.wait();
            });
        }
        let mut result = Ok(());
        for i in 0..races {
            let set_up = (|| -> Result<()> {
                let hid = owner.dispatch(&fixture::sdk_envelope(i as u64)?)?;
                owner.claim(&hid)?;
                fixture::orphan(&owner, &sup, &hid)?;
                *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(hid);
                Ok(())
            })();
            if let Err(e) = set_up {
                result = Err(e);
                break;
            }
            wins.lock().unwrap_or_else(|p| p.into_inner()).clear();
            let t = Instant::now();
            start.wait();
            end.wait();
            total += t.elapsed();
            let w = wins.lock().unwrap_or_else(|p| p.into_inner()).len();
            assert_eq!(w, 1, "exactly one of {racers} recoverers must win, {w} did");
        }
        *slot.lock().unwrap_or_else(|p| p.into_inner()) = None;
        start.wait();
        result
    })?;
    drop(runners);
    Ok(races as f64 / total.as_secs_f64())
}

/// Dispatch a census handoff (what `dhp dispatch --census LO,HI,CHUNK`
/// makes), run `dhp work` on it as a child process, and return its peak RSS
/// (see [`measure::peak_rss`]).
pub fn worker_rss(dhp: &Path, work: &Path, lo: u64, hi: u64, chunk: u64) -> Result<Value> {
    let root = fixture::fresh_root(work, "rss");
    let r = Runner::open(&root, "dispatcher", dhp_core::Config::default())?;
    let chunks = (hi - lo).div_ceil(chunk) as i64;
    let budget = dhp_core::envelope::Budget {
        max_steps: chunks + 100,
        max_spend_usd: 500.0,
        max_wallclock_s: 5400.0,
        max_attempts: 25,
    };
    let env = dhp_core::envelope::build(
        dhp_workload::census::KIND,
        dhp_workload::census::inputs(lo, hi, chunk),
        dhp_workload::census::output_schema(),
        dhp_core::envelope::BuildOptions {
            budget: Some(budget.to_value()),
            created_by: Some("dhp-bench".into()),
            ..Default::default()
        },
    )?;
    let hid = r.dispatch(&env)?;
    drop(r);
    let mut cmd = std::process::Command::new(dhp);
    cmd.arg("--json").arg("work").arg(&root).args(["--runner", "w-rss", "claim", &hid]);
    let p = measure::peak_rss(&mut cmd)?;
    let _ = std::fs::remove_dir_all(&root);
    if p.exit_code != Some(0) {
        return Err(dhp_core::Error::validation(format!(
            "dhp work failed ({:?}): {} {}",
            p.exit_code, p.stdout, p.stderr
        )));
    }
    Ok(
        json!({"max_rss_kib": p.vm_hwm_kib, "census": format!("{lo},{hi},{chunk}"), "method": "VmHWM at PTRACE_EVENT_EXIT",
              "detail": {"worker": "dhp work (release build)", "anon_kib_at_exit": p.anon_kib, "file_kib_at_exit": p.file_kib,
                         "top_mappings_at_exit": p.top_mappings, "checkpoints": chunks, "elapsed_s": p.elapsed_s,
                         "result": serde_json::from_str::<Value>(p.stdout.trim()).unwrap_or(Value::Null)}}),
    )
}
