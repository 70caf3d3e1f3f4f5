//! `mutant-worker`: deliberately broken census workers, to prove that the
//! dhp-chaos checker catches protocol violations. Same command line as
//! `dhp work` (so it plugs in as `--workers "mutant-worker --mode M"`) and
//! the same history format, but:
//!
//! - `skip-fence`: claims/recovers properly, then writes checkpoints and the
//!   completion straight into the SQLite store with rusqlite, never checking
//!   the ownership row — a worker that ignores fencing. Harmless while it is
//!   the only holder; once it is paused, replaced and woken (or its lease is
//!   otherwise taken), its writes interleave with the successor's.
//! - `complete-twice`: a correct run, then a second completion written
//!   directly to the store, both recorded as `complete ok`.
//! - `wrong-result`: a correct run that completes with prime_count off by one.
//! - `ack-unshipped` (with `--ship-to`): a shipper that acknowledges its own
//!   checkpoints: each line goes to the local buffer only, never to the
//!   peer, and the worker goes on as if the peer had acked it.
//! - `ship-altered` (with `--ship-to`): ships seq 2 with a different state
//!   (count + 1, its hash recomputed and chained, so the peer accepts it):
//!   the peer's log no longer converges to the store.
//! - `ship-late` (with `--ship-to`): ships each checkpoint only after the
//!   next two are committed (two behind; the rest before completing): in
//!   synchronous mode a host death then loses two or three committed chunks.
//!
//! - `cas-less-recover`: recovers with an UPDATE of the ownership row that
//!   checks nothing (not that the holder is `__orphaned__`, not the fence it
//!   observed): of racing recoverers every one "wins", each bumping the
//!   fence again; then it works through dhp-core as usual (so the losers
//!   are fenced out at their next write).
//!
//! - `recover-no-bump`: recovers from the orphan tombstone (a proper
//!   compare-and-set on `__orphaned__`) but keeps the orphan's fence
//!   instead of bumping it by one (caught by `model`); then works through
//!   dhp-core with that fence.
//! - `quit-when-replaced`: a correct worker that, before each chunk, reads
//!   the ownership row and exits 5 when it is no longer the holder — a
//!   woken zombie that never tries to write (its fence is never tested).
//!
//! - `local-census`: a correct worker that ignores the harness's workload
//!   service (`DHP_WORKLOAD_URL`): it computes every chunk itself, right,
//!   and carries no stamp — a result the harness never saw computed.
//!
//! - `no-fsync`: a correct, fenced worker whose checkpoints are written
//!   through a connection at `PRAGMA synchronous=OFF`: each commit is
//!   acknowledged without an fsync of the WAL (the durability mutant;
//!   meant for SQLite rounds with `--lose-unsynced`). Its claim, heartbeats
//!   and completion go through dhp-core and do sync, as do the supervisors',
//!   so what a crash loses is the checkpoints since the last of those.
//!
//! - `throw-away`: asks the workload service for every chunk twice and
//!   keeps only the second answer — work computed and thrown away, which
//!   a killed worker of this kind leaves behind many times over (`rework`).
//!
//! Every other mode gets its chunks from the workload service when
//! `DHP_WORKLOAD_URL` is set, as `dhp work` does, so that only its planted
//! bug shows.
//!
//! With `--ship-to HOST:PORT --ship-buffer DIR/ [--ship-mode sync|async]`
//! the other modes ship over TCP with dhp-core's own shipper.
//!
//! Database-fault mutants (any store; meant for PostgreSQL rounds with db faults):
//!
//! - `ack-uncommitted`: every third checkpoint is recorded `ok` without being
//!   written — an acknowledgement the store never made durable, which a
//!   database crash exposes.
//! - `wedge-on-db-error`: after a checkpoint fails (the database went away)
//!   it neither exits nor retries. Its heartbeat thread outlives the error
//!   (it ignores failures and the store reconnects on the next call), so
//!   once the server is back it renews the lease with its fence — as long
//!   as the outage was shorter than the lease — and the handoff stays
//!   `running`, held by a worker that never moves it again: stuck. It
//!   publishes no liveness token (a lease-only worker, like the
//!   reference's, or `dhp work --no-liveness`): a token's lock drops with
//!   the crash and the leader would orphan the handoff at once, so only a
//!   lease-only worker can wedge a handoff this way. (The chaos harness
//!   passes `--no-liveness` to builtin workers only.)
//! - `unheld-liveness` (PostgreSQL): lists itself in the `liveness` table
//!   without taking its advisory lock, so the leader sees a live worker as
//!   dead (a false orphan).
//!
//! Store disk mutant (meant for SQLite rounds with `--store-disk`):
//!
//! - `ack-on-full`: a checkpoint whose commit fails because the store's
//!   disk is full (`SQLITE_FULL`) is recorded `ok` anyway, at the seq it
//!   would have had, and the worker goes on — an acknowledgement of a
//!   commit SQLite refused.
//!
//! ```text
//! mutant-worker --mode skip-fence ROOT --runner ID claim|recover HID
//!               [--ship LOG] [--pace S] [--history FILE] [--no-liveness]
//! ```

use anyhow::{bail, Context, Result};
use dhp_core::envelope::utcnow_iso;
use dhp_core::transport::chain::Chain;
use dhp_core::transport::net::{BufferLog, ShipMode, ShipperOptions, TcpShipper};
use dhp_core::transport::{catch_up, log, FileShipper, Shipper};
use dhp_core::{json, liveness, Config, Lease, Runner};
use dhp_workload::census;
use dhp_workload::history::History;
use dhp_workload::history::Kind as H;
use rusqlite::Connection;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

// the crate root is a file, so its module needs its path
#[path = "mutant-worker/around.rs"]
mod around;
use around::{
    db, list_without_lock, recover_without_cas, sql, write_checkpoint_unfenced, write_checkpoint_unsynced,
    write_complete_unfenced,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    SkipFence,
    CompleteTwice,
    WrongResult,
    AckUnshipped,
    ShipAltered,
    ShipLate,
    AckUncommitted,
    WedgeOnDbError,
    UnheldLiveness,
    AckOnFull,
    CasLessRecover,
    RecoverNoBump,
    LocalCensus,
    ThrowAway,
    QuitWhenReplaced,
    NoFsync,
}

/// The variable that names the harness's workload service (CONTRACT.md §2.1).
const WORKLOAD_ENV: &str = "DHP_WORKLOAD_URL";

struct Args {
    mode: Mode,
    root: PathBuf,
    runner: String,
    start: String,
    hid: String,
    ship: Option<PathBuf>,
    ship_to: Option<String>,
    ship_buffer: Option<PathBuf>,
    ship_async: bool,
    pace: f64,
    history: Option<PathBuf>,
    liveness: bool,
}

fn parse_args() -> Result<Args> {
    let mut mode = std::env::var("DHP_MUTANT_MODE").ok();
    let (mut runner, mut ship, mut pace, mut history, mut liveness) = (None, None, 0.0, None, true);
    let (mut ship_to, mut ship_buffer, mut ship_async) = (None, None, false);
    let mut pos = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = |name: &str| it.next().with_context(|| format!("{name} needs a value"));
        match a.as_str() {
            "--mode" => mode = Some(val("--mode")?),
            "--runner" => runner = Some(val("--runner")?),
            "--ship" => ship = Some(PathBuf::from(val("--ship")?)),
            "--ship-to" => ship_to = Some(val("--ship-to")?),
            "--ship-buffer" => ship_buffer = Some(PathBuf::from(val("--ship-buffer")?)),
            "--ship-mode" => ship_async = val("--ship-mode")? == "async",
            "--pace" => {
                let s: f64 = val("--pace")?.parse()?;
                dhp_core::config::duration_from_secs("--pace", s, 3_600.0)?;
                pace = s;
            }
            "--history" => history = Some(PathBuf::from(val("--history")?)),
            "--no-liveness" => liveness = false,
            "--no-background-heartbeat" => {}
            s if s.starts_with("--") => bail!("unknown flag {s}"),
            _ => pos.push(a),
        }
    }
    let [root, start, hid] =
        <[String; 3]>::try_from(pos).map_err(|p| anyhow::anyhow!("want ROOT claim|recover HID, got {p:?}"))?;
    let mode = match mode.as_deref() {
        Some("skip-fence") => Mode::SkipFence,
        Some("complete-twice") => Mode::CompleteTwice,
        Some("wrong-result") => Mode::WrongResult,
        Some("local-census") => Mode::LocalCensus,
        Some("throw-away") => Mode::ThrowAway,
        Some("ack-unshipped") => Mode::AckUnshipped,
        Some("ship-altered") => Mode::ShipAltered,
        Some("ship-late") => Mode::ShipLate,
        Some("ack-uncommitted") => Mode::AckUncommitted,
        Some("wedge-on-db-error") => Mode::WedgeOnDbError,
        Some("unheld-liveness") => Mode::UnheldLiveness,
        Some("ack-on-full") => Mode::AckOnFull,
        Some("cas-less-recover") => Mode::CasLessRecover,
        Some("recover-no-bump") => Mode::RecoverNoBump,
        Some("quit-when-replaced") => Mode::QuitWhenReplaced,
        Some("no-fsync") => Mode::NoFsync,
        other => bail!(
            "--mode skip-fence|complete-twice|wrong-result|ack-unshipped|ship-altered|ship-late|ack-uncommitted|wedge-on-db-error|unheld-liveness|ack-on-full|cas-less-recover|recover-no-bump|local-census|throw-away|quit-when-replaced|no-fsync (got {other:?})"
        ),
    };
    if matches!(mode, Mode::AckUnshipped | Mode::ShipAltered | Mode::ShipLate)
        && (ship_to.is_none() || ship_buffer.is_none())
    {
        bail!("--mode ack-unshipped, ship-altered and ship-late ship over TCP: they need --ship-to and --ship-buffer");
    }
    if start != "claim" && start != "recover" {
        bail!("mode must be claim or recover");
    }
    Ok(Args {
        mode,
        root: PathBuf::from(root),
        runner: runner.context("--runner is required")?,
        start,
        hid,
        ship,
        ship_to,
        ship_buffer,
        ship_async,
        pace,
        history,
        liveness,
    })
}

/// [`still_mine`], asked again when the answer took long (the process was
/// stopped while it read): the answer is from after any stop, so a woken
/// replaced worker never asks for work on a stale "yes".
fn still_mine_now(runner: &Runner, hid: &str, holder: &str, fence: i64) -> anyhow::Result<bool> {
    loop {
        let t = std::time::Instant::now();
        let mine = still_mine(runner, hid, holder, fence)?;
        if t.elapsed() < Duration::from_millis(100) {
            return Ok(mine);
        }
    }
}

/// The store still names `holder` with `fence` as the handoff's owner.
fn still_mine(runner: &Runner, hid: &str, holder: &str, fence: i64) -> anyhow::Result<bool> {
    Ok(runner.ownership(hid)?.is_some_and(|o| o.holder == holder && o.fence.get() == fence))
}

fn main() {
    match run() {
        Ok(()) => {}
        Err(e) => {
            eprintln!("mutant-worker: {e:#}");
            std::process::exit(5);
        }
    }
}

fn run() -> Result<()> {
    let a = parse_args()?;
    let cfg = Config::from_env()?;
    let runner = Runner::open(&a.root, &a.runner, cfg.clone())?;
    let h = match &a.history {
        Some(p) => History::open(p, &a.runner)?,
        None => History::disabled(),
    };
    let _token = liveness_token(&a, &runner)?;
    let mut ctx = take(&a, &runner, &cfg, &h)?;
    let w =
        Worker { a: &a, cfg: &cfg, runner: &runner, h: &h, hid: &a.hid, holder: &a.runner, fence: ctx.fence().get() };
    let env = runner.envelope_bare(w.hid)?;
    let get =
        |k: &str| env.pointer(&format!("/task/inputs/inline/{k}")).and_then(Value::as_u64).context("census input");
    let (lo, hi, chunk) = (get("lo")?, get("hi")?, get("chunk")?.max(1));
    let mut out = w.outbox()?;
    // only the modes that write around the store's API open the SQLite file
    let mut conn = match a.mode {
        Mode::SkipFence | Mode::CompleteTwice => Some(db(&a.root)?),
        Mode::NoFsync => {
            let c = db(&a.root)?;
            c.execute_batch("PRAGMA synchronous=OFF;")?;
            Some(c)
        }
        _ => None,
    };
    w.keep_lease(&mut ctx)?;
    let (count, total) = w.work(&ctx, &mut conn, &mut out, lo, hi, chunk)?;
    let mut result =
        json!({"lo": lo, "hi": hi, "prime_count": count, "prime_sum": total, "chunks_done": (hi - lo).div_ceil(chunk)});
    if a.mode == Mode::WrongResult {
        result["prime_count"] = json!(count + 1);
    }
    if let Some(s) = out.shipper.as_deref_mut() {
        while let Some((ps, pl)) = out.held.pop_front() {
            s.ship_checkpoint(w.hid, ps, &pl)?;
        }
        s.flush()?;
    }
    w.complete(&mut ctx, &mut conn, &result)?;
    println!("{}", json!({"completed": true, "hid": w.hid, "mode": format!("{:?}", a.mode)}));
    Ok(())
}

/// The worker's liveness token, as its mode has it: none, a listing that
/// takes no lock, or the store's own (PostgreSQL: a session advisory
/// lock), else a flock under the root.
fn liveness_token(a: &Args, runner: &Runner) -> Result<Option<Box<dyn std::any::Any>>> {
    Ok(if a.mode == Mode::UnheldLiveness {
        list_without_lock(&a.root, &a.runner)?;
        None
    } else if a.liveness && a.mode != Mode::WedgeOnDbError {
        match runner.store().publish_liveness(runner.id()) {
            Ok(Some(t)) => Some(t as Box<dyn std::any::Any>),
            Ok(None) => liveness::publish(&a.root, runner.id()).ok().map(|t| Box::new(t) as Box<dyn std::any::Any>),
            Err(_) => None,
        }
    } else {
        None
    })
}

/// Claim or recover the handoff (a recover without the CAS in the modes
/// that skip it), recorded in the history.
fn take(a: &Args, runner: &Runner, cfg: &Config, h: &History) -> Result<dhp_core::TaskContext> {
    let (hid, holder) = (a.hid.clone(), a.runner.clone());
    let op = a.start.as_str();
    h.record(op, H::Invoke, json!({"hid": hid, "holder": holder}));
    let ctx: Result<_> = if op == "claim" {
        runner.claim(&hid).map_err(Into::into)
    } else if matches!(a.mode, Mode::CasLessRecover | Mode::RecoverNoBump) {
        recover_without_cas(&a.root, &hid, &holder, cfg, a.mode == Mode::RecoverNoBump)
            .and_then(|f| Lease::presented(&hid, f).map_err(Into::into))
            .map(|l| runner.context(l))
    } else {
        runner.recover(&hid).map_err(Into::into)
    };
    let ctx = match ctx {
        Ok(c) => c,
        Err(e) => {
            h.record(op, H::Fail, json!({"hid": hid, "holder": holder, "error": e.to_string()}));
            return Err(e);
        }
    };
    h.record(op, H::Ok, json!({"hid": hid, "holder": holder, "fence": ctx.fence()}));
    Ok(ctx)
}

/// Where checkpoints go besides the store, and what is held back.
struct Outbox {
    shipper: Option<Box<dyn Shipper>>,
    /// Lines held back (ship-late), oldest first.
    held: std::collections::VecDeque<(i64, String)>,
    /// Shipped lines name their predecessor (what this worker shipped before).
    chain: Chain,
}

/// One run, once it holds the handoff: what its phases share.
struct Worker<'a> {
    a: &'a Args,
    cfg: &'a Config,
    runner: &'a Runner,
    h: &'a History,
    hid: &'a str,
    holder: &'a str,
    fence: i64,
}

impl Worker<'_> {
    /// The shipper the flags ask for, caught up with the store.
    fn outbox(&self) -> Result<Outbox> {
        let (a, cfg, hid) = (self.a, self.cfg, self.hid);
        let mut shipper: Option<Box<dyn Shipper>> = match (&a.ship_to, &a.ship_buffer) {
            (Some(_), Some(buf)) if a.mode == Mode::AckUnshipped => {
                // "acked" by itself: the buffer file is all it ever writes
                Some(Box::new(FileShipper { path: buf.join(format!("{hid}.log")), cfg: cfg.clone() }))
            }
            (Some(to), Some(buf)) => {
                let mode = if a.ship_async { ShipMode::Async { max_lag: 256 } } else { ShipMode::Sync };
                let opts = ShipperOptions {
                    buffer: Some(BufferLog::Dir(buf.clone())),
                    cfg: cfg.clone(),
                    ..ShipperOptions::new(mode, std::env::var("DHP_TRANSPORT_TOKEN").unwrap_or_default(), cfg.clone())
                };
                Some(Box::new(TcpShipper::new(to, opts)?))
            }
            _ => {
                a.ship.as_ref().map(|p| Box::new(FileShipper { path: p.clone(), cfg: cfg.clone() }) as Box<dyn Shipper>)
            }
        };
        if let Some(s) = shipper.as_deref_mut() {
            catch_up(s, self.runner, hid)?;
        }
        let chain = Chain::after(hid, self.runner.last_checkpoint_row(hid)?.map(|r| (r.seq, r.state_hash)));
        Ok(Outbox { shipper, held: Default::default(), chain })
    }

    fn keep_lease(&self, ctx: &mut dhp_core::TaskContext) -> Result<()> {
        if matches!(self.a.mode, Mode::SkipFence | Mode::WedgeOnDbError) {
            // keep the lease alive, ignoring every error (a worker that never
            // notices it lost; after a database restart the store reconnects
            // on the next heartbeat). dhp-core's own heartbeat thread stops at
            // the first error.
            let (r2, lease) = (self.runner.clone(), Lease::presented(self.hid, self.fence)?);
            let every = dhp_core::config::duration_from_secs(
                "DHP_LEASE_INTERVAL_S / 2",
                self.cfg.lease_interval_s / 2.0,
                dhp_core::config::MAX_KNOB_S,
            )?;
            std::thread::spawn(move || loop {
                std::thread::sleep(every);
                let _ = r2.heartbeat(&lease);
            });
        } else {
            ctx.start_heartbeat(None);
        }
        Ok(())
    }

    /// The census from the last checkpoint to `hi`, a checkpoint (and a
    /// shipped line) per chunk: the count and sum.
    fn work(
        &self,
        ctx: &dhp_core::TaskContext,
        conn: &mut Option<Connection>,
        out: &mut Outbox,
        lo: u64,
        hi: u64,
        chunk: u64,
    ) -> Result<(u64, u64)> {
        let (a, hid, holder, fence) = (self.a, self.hid, self.holder, self.fence);
        let mut written = 0u64;
        let (mut next, mut count, mut total) = match self.runner.last_checkpoint(hid)? {
            None => (lo, 0, 0),
            Some(st) => (
                st["next_n"].as_u64().unwrap_or(lo),
                st["count"].as_u64().unwrap_or(0),
                st["total"].as_u64().unwrap_or(0),
            ),
        };
        let service = match std::env::var(WORKLOAD_ENV) {
            Ok(url) if a.mode != Mode::LocalCensus => Some(dhp_workload_client::Workload::parse(&url)?),
            _ => None,
        };
        while next < hi {
            if a.mode == Mode::QuitWhenReplaced && !still_mine_now(self.runner, hid, holder, fence)? {
                // like a worker whose heartbeat notices the lost lease first:
                // it leaves without asking for work or writing
                self.h.record("exit", H::Event, json!({"hid": hid, "reason": "replaced"}));
                std::process::exit(5);
            }
            let end = (next + chunk).min(hi);
            let (c, s, stamp) = match &service {
                Some(w) => {
                    if a.mode == Mode::ThrowAway {
                        w.chunk(hid, next, end, holder, fence)?;
                    }
                    let got = w.chunk(hid, next, end, holder, fence)?;
                    (got.count, got.sum, Some(got.stamp))
                }
                None => {
                    let (c, s) = census::chunk(next, end);
                    (c, s, None)
                }
            };
            count += c;
            total += s;
            next = end;
            let mut state = json!({"next_n": next, "count": count, "total": total});
            if let Some(stamp) = stamp {
                state["stamp"] = json!(stamp);
            }
            self.h.record(
                "checkpoint",
                H::Invoke,
                json!({"hid": hid, "holder": holder, "fence": fence, "next_n": next}),
            );
            written += 1;
            let seq = self.checkpoint(ctx, conn, &state, written, next)?;
            self.h.record(
                "checkpoint",
                H::Ok,
                json!({"hid": hid, "holder": holder, "fence": fence, "seq": seq, "next_n": next}),
            );
            self.ship(out, seq, &state, count)?;
            // (no-fsync: a step note is a synced write, which would make its
            // checkpoint durable after all)
            if !matches!(a.mode, Mode::SkipFence | Mode::NoFsync) {
                let _ = ctx.note_step(1);
            }
            if a.pace > 0.0 {
                std::thread::sleep(dhp_core::config::duration_from_secs("--pace", a.pace, 3_600.0)?);
            }
        }
        Ok((count, total))
    }

    /// Write checkpoint number `written` as the mode does it: its seq (the
    /// one the store would have given, in the modes that ack without it).
    fn checkpoint(
        &self,
        ctx: &dhp_core::TaskContext,
        conn: &mut Option<Connection>,
        state: &Value,
        written: u64,
        next: u64,
    ) -> Result<i64> {
        let (a, hid, holder, fence) = (self.a, self.hid, self.holder, self.fence);
        let seq = if a.mode == Mode::SkipFence {
            write_checkpoint_unfenced(sql(conn)?, hid, state)
        } else if a.mode == Mode::NoFsync {
            write_checkpoint_unsynced(sql(conn)?, hid, holder, fence, state)
        } else if a.mode == Mode::AckUncommitted && written % 3 == 0 {
            // the seq the store would have given it, never written
            Ok(self.runner.last_checkpoint_row(hid)?.map_or(0, |r| r.seq + 1))
        } else {
            ctx.checkpoint(state).map_err(Into::into)
        };
        match seq {
            Ok(s) => Ok(s),
            Err(e) if a.mode == Mode::AckOnFull && e.to_string().contains("disk is full") => {
                // the seq the store would have given it; SQLite rolled it back
                Ok(self.runner.last_checkpoint_row(hid).ok().flatten().map_or(0, |r| r.seq + 1))
            }
            Err(e) => {
                self.h.record(
                    "checkpoint",
                    H::Fail,
                    json!({"hid": hid, "holder": holder, "fence": fence, "next_n": next, "error": e.to_string()}),
                );
                if a.mode == Mode::WedgeOnDbError {
                    // the work loop is gone; the heartbeat thread lives on,
                    // renewing the lease once the database is back
                    loop {
                        std::thread::sleep(Duration::from_secs(3600));
                    }
                }
                Err(e)
            }
        }
    }

    /// Ship checkpoint `seq` (altered, or held back, in the modes that do).
    fn ship(&self, out: &mut Outbox, seq: i64, state: &Value, count: u64) -> Result<()> {
        let (a, hid) = (self.a, self.hid);
        let Some(s) = out.shipper.as_deref_mut() else { return Ok(()) };
        let mut shipped = state.clone();
        if a.mode == Mode::ShipAltered && seq == 2 {
            shipped["count"] = json!(count + 1);
        }
        let (_, hash) = json::state_text_and_hash(&shipped)?;
        let line = if a.ship_to.is_some() {
            out.chain.line(seq, &shipped, &hash, &utcnow_iso())?
        } else {
            log::checkpoint_line(seq, &shipped, &hash, &utcnow_iso())?
        };
        if a.mode == Mode::ShipLate {
            // keep the last two back; ship the one before them
            out.held.push_back((seq, line));
            if out.held.len() > 2 {
                if let Some((ps, pl)) = out.held.pop_front() {
                    s.ship_checkpoint(hid, ps, &pl)?;
                }
            }
        } else {
            s.ship_checkpoint(hid, seq, &line)?;
        }
        Ok(())
    }

    /// Complete (around the fence in skip-fence; twice in complete-twice),
    /// recorded in the history.
    fn complete(&self, ctx: &mut dhp_core::TaskContext, conn: &mut Option<Connection>, result: &Value) -> Result<()> {
        let (a, h, hid, holder, fence) = (self.a, self.h, self.hid, self.holder, self.fence);
        h.record("complete", H::Invoke, json!({"hid": hid, "holder": holder, "fence": fence, "result": result}));
        let done = if a.mode == Mode::SkipFence {
            write_complete_unfenced(sql(conn)?, hid, result)
        } else {
            ctx.complete(result).map_err(Into::into)
        };
        if let Err(e) = done {
            h.record(
                "complete",
                H::Fail,
                json!({"hid": hid, "holder": holder, "fence": fence, "error": e.to_string()}),
            );
            return Err(e);
        }
        h.record("complete", H::Ok, json!({"hid": hid, "holder": holder, "fence": fence, "result": result}));
        if a.mode == Mode::CompleteTwice {
            std::thread::sleep(Duration::from_millis(5));
            h.record("complete", H::Invoke, json!({"hid": hid, "holder": holder, "fence": fence, "result": result}));
            write_complete_unfenced(sql(conn)?, hid, result)?;
            h.record("complete", H::Ok, json!({"hid": hid, "holder": holder, "fence": fence, "result": result}));
        }
        Ok(())
    }
}
