//! The built-in prime-census worker behind `dhp work` and `dhp a2a
//! --workers`: the task the reference's chaos harness runs, checkpointing
//! `{next_n, count, total}` after every chunk and shipping each checkpoint
//! once it is committed. The workload (census, history lines) is the
//! dhp-workload crate; this loop drives it through the protocol library's
//! public API only, as a foreign worker would.

use crate::ride::Ride;
use dhp_core::error::{Error, Result};
use dhp_core::id::HandoffId;
use dhp_core::json;
use dhp_core::liveness;
use dhp_core::runner::{Runner, TaskContext};
use dhp_core::store::postgres::live::PgToken;
use dhp_core::transport::chain::Chain;
use dhp_core::transport::{catch_up, Shipper};
use dhp_workload::census;
use dhp_workload::history::History;
use dhp_workload::history::Kind as H;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How the worker gets the handoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Claim a pending handoff.
    Claim,
    /// Recover an orphaned handoff from its last checkpoint.
    Recover,
}

/// Options of one worker run.
pub struct WorkOptions {
    /// The store directory (same-host liveness tokens); `None` for a
    /// database store, whose backend publishes its own token.
    pub root: Option<PathBuf>,
    /// Claim a pending handoff or recover an orphaned one.
    pub start: Start,
    /// The handoff to work on.
    pub hid: String,
    /// Where to ship checkpoints (a log file or a TCP transport server), if anywhere.
    pub shipper: Option<Box<dyn Shipper>>,
    /// Sleep after each chunk (simulated slow work).
    pub pace: Duration,
    /// Where to record the operation history (chaos), if anywhere.
    pub history: History,
    /// Stop (exit code 3, no completion) after this many checkpoints.
    pub stop_after: Option<u64>,
    /// Publish a same-host liveness token before claiming.
    pub liveness: bool,
    /// Heartbeat from a background thread as well as after each chunk.
    pub background_heartbeat: bool,
    /// Get each chunk from a harness's workload service (and carry its
    /// stamp in the checkpoint) instead of sieving it here.
    pub workload: Option<dhp_workload_client::Workload>,
}

/// What a run did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The census completed; its result.
    Completed(Value),
    /// Stopped after `stop_after` checkpoints without completing; where it stopped.
    Stopped(Value),
}

fn inline_u64(env: &Value, key: &str) -> Result<u64> {
    env.pointer(&format!("/task/inputs/inline/{key}"))
        .and_then(Value::as_u64)
        .ok_or_else(|| Error::validation(format!("prime.census input {key:?} must be a non-negative integer")))
}

fn hist_err(h: &History, op: &str, e: &Error, fields: Value) {
    let mut f = fields;
    f["error"] = json!(e.to_string());
    f["error_kind"] = json!(e.kind());
    h.record(op, H::Fail, f);
}

/// `(lo, hi, chunk)` of a census envelope, unchecked.
fn census_fields(env: &Value) -> Result<(u64, u64, u64)> {
    let (lo, hi) = (inline_u64(env, "lo")?, inline_u64(env, "hi")?);
    Ok((lo, hi, inline_u64(env, "chunk").unwrap_or(100).max(1)))
}

/// Bounds keep every counter (and the sieve's memory) in range; an empty
/// range is kept as the reference keeps it (completes at once), a reversed
/// one (LO > HI) is refused.
fn check_range((lo, hi, chunk): (u64, u64, u64)) -> Result<(u64, u64, u64)> {
    if hi != lo {
        census::Spec::new(lo, hi, chunk).map_err(census_error)?;
    }
    Ok((lo, hi, chunk))
}

/// A refused census specification as the command line reports it: the
/// same kinds (ValidationError, exit 3) and texts as every other input.
pub fn census_error(e: dhp_workload::Error) -> Error {
    match e {
        dhp_workload::Error::OutOfRange { name, value, range } => Error::OutOfRange { name, value, range },
        other => {
            let reason = match &other {
                dhp_workload::Error::Invalid { message, .. } => message.clone(),
                _ => other.to_string(),
            };
            Error::validation_from(reason, other)
        }
    }
}

/// The workload service failed: a transport error (exit 10) of the kind
/// that says what to do about it.
pub fn workload_error(e: dhp_workload::Error) -> Error {
    use dhp_core::error::TransportKind;
    let kind = match &e {
        dhp_workload::Error::Service { failure: dhp_workload::ServiceFailure::Address, .. } => TransportKind::Address,
        dhp_workload::Error::Service { failure: dhp_workload::ServiceFailure::Refused, .. } => TransportKind::Refused,
        _ => TransportKind::Unacknowledged,
    };
    Error::transport_from(kind, format!("--workload: {e}"), e)
}

/// Run the census worker to completion (or `stop_after`).
pub fn run_census(runner: &Runner, mut opts: WorkOptions) -> Result<Outcome> {
    // Validated once here; every call below takes the parsed id.
    let hid = HandoffId::parse(&opts.hid)?;
    let h = &opts.history;
    let holder = runner.id().to_string();
    let token = if opts.liveness { liveness_token(runner, &opts, runner.id()) } else { None };
    // Inputs are immutable (content-addressed): a census out of bounds is
    // refused before it is claimed, so it stays pending. An unknown handoff
    // or one that is no census at all is left to the claim to report.
    let checked = match runner.envelope_bare(&hid).ok().and_then(|env| census_fields(&env).ok()) {
        Some(range) => Some(check_range(range)?),
        None => None,
    };
    let (mut ctx, claimed) = take(runner, &opts, &hid, &holder)?;
    let fence = ctx.fence();
    // On a database store the worker rides through a lost server (crate::ride).
    let pg_token = token.as_ref().and_then(|t| t.downcast_ref::<PgToken>());
    let mut ride = opts.root.is_none().then(|| Ride::new(&ctx, claimed));
    match &mut ride {
        Some(r) if opts.background_heartbeat => r.start_heartbeat()?,
        None if opts.background_heartbeat => ctx.start_heartbeat(None),
        _ => {}
    }
    let (lo, hi, chunk) = match checked {
        Some(range) => range,
        None => check_range(census_fields(&runner.envelope_bare(&hid)?)?)?,
    };
    if let Some(s) = opts.shipper.as_deref_mut() {
        let n = match catch_up(s, runner, hid.as_str()) {
            Ok(n) => n,
            Err(e) => {
                // Nothing computed yet: hand the handoff back instead of
                // leaving it claimed by a process about to exit.
                if let Err(re) = ctx.release("shipping failed before any work") {
                    tracing::warn!(error = %re, "could not release the handoff after the ship failure");
                }
                return Err(e);
            }
        };
        if n > 0 {
            tracing::info!(n, "re-shipped checkpoints the peer lacked");
        }
    }
    let last = runner.last_checkpoint_row(&hid)?;
    // Shipped lines name their handoff and predecessor (docs/log-chain.md).
    let mut chain = Chain::after(hid.as_str(), last.as_ref().map(|r| (r.seq, r.state_hash.clone())));
    // The last seq under this lease: what settles a checkpoint in flight.
    let mut prev = last.as_ref().map(|r| r.seq);
    let last = last.map(|r| json::parse(&r.state_json)).transpose()?;
    let (mut next, mut count, mut total) = resume_point(last.as_ref(), lo);
    let resumed_from = next;
    let started = Instant::now();
    let mut done = 0u64;
    while next < hi {
        let end = next.saturating_add(chunk).min(hi);
        let (c, s, stamp) = compute_chunk(&opts, &hid, (next, end), &holder, fence)?;
        // A checkpoint written by someone else may hold any counts.
        let (Some(c2), Some(t2)) = (count.checked_add(c), total.checked_add(s)) else {
            return Err(Error::validation(format!("prime.census counters overflow at next_n={next}")));
        };
        (count, total) = (c2, t2);
        next = end;
        let mut state = json!({"next_n": next, "count": count, "total": total});
        if let Some(stamp) = stamp {
            state["stamp"] = json!(stamp);
        }
        h.record("checkpoint", H::Invoke, json!({"hid": hid, "holder": holder, "fence": fence, "next_n": next}));
        let step = match &ride {
            Some(r) => r.checkpoint(&ctx, pg_token, &state, prev),
            None => ctx.checkpoint_step(&state, 1),
        };
        let step = match step {
            Ok(step) => step,
            Err(e) => {
                hist_err(h, "checkpoint", &e, json!({"hid": hid, "holder": holder, "fence": fence, "next_n": next}));
                return Err(e);
            }
        };
        let seq = step.seq();
        prev = Some(seq);
        let fields = json!({"hid": hid, "holder": holder, "fence": fence, "seq": seq, "next_n": next});
        h.record("checkpoint", H::Ok, fields);
        dhp_core::failpoint_hit("ship.after_commit");
        if let Some(s) = opts.shipper.as_deref_mut() {
            // Ship the committed row itself: its text, hash and `at`.
            let line = chain.line_of_row(&step.row)?;
            s.ship_checkpoint(hid.as_str(), seq, &line)?;
        }
        done += 1;
        step.enforce_budget()?;
        if !opts.pace.is_zero() {
            std::thread::sleep(opts.pace);
        }
        if opts.stop_after.is_some_and(|k| done >= k) && next < hi {
            return Ok(Outcome::Stopped(json!({"stopped": true, "hid": hid, "checkpoints": done, "next_n": next})));
        }
    }
    if let Some(s) = opts.shipper.as_deref_mut() {
        s.flush()?;
    }
    let result = json!({"lo": lo, "hi": hi, "prime_count": count, "prime_sum": total,
                        "chunks_done": (hi - lo).div_ceil(chunk)});
    h.record("complete", H::Invoke, json!({"hid": hid, "holder": holder, "fence": fence, "result": result}));
    let completed = match &mut ride {
        Some(r) => r.complete(&mut ctx, pg_token, &result),
        None => ctx.complete(&result),
    };
    if let Err(e) = completed {
        hist_err(h, "complete", &e, json!({"hid": hid, "holder": holder, "fence": fence}));
        return Err(e);
    }
    h.record("complete", H::Ok, json!({"hid": hid, "holder": holder, "fence": fence, "result": result}));
    Ok(Outcome::Completed(json!({
        "completed": true, "hid": hid, "prime_count": count, "prime_sum": total,
        "resumed_from": resumed_from, "chunks_this_run": done,
        "elapsed_s": started.elapsed().as_secs_f64(),
    })))
}

/// This worker's liveness token: the backend's own (PostgreSQL: an
/// advisory lock any host's supervisor can test), else a same-host flock
/// under the store root; none (lease-only, said) when neither can be had.
fn liveness_token(runner: &Runner, opts: &WorkOptions, holder: &dhp_core::WorkerId) -> Option<Box<dyn std::any::Any>> {
    let published = match runner.store().publish_liveness(holder) {
        Ok(Some(t)) => Ok(t as Box<dyn std::any::Any>),
        Ok(None) => match &opts.root {
            Some(root) => liveness::publish(root, holder).map(|t| Box::new(t) as Box<dyn std::any::Any>),
            None => Err(Error::validation("no store directory for a liveness token")),
        },
        Err(e) => Err(e),
    };
    match published {
        Ok(t) => Some(t),
        Err(e) => {
            tracing::warn!(error = %e, "running without a liveness token (lease-only)");
            None
        }
    }
}

/// Claim or recover `hid` (recorded in the history), and when it was asked.
fn take(runner: &Runner, opts: &WorkOptions, hid: &HandoffId, holder: &str) -> Result<(TaskContext, Instant)> {
    let h = &opts.history;
    let op = match opts.start {
        Start::Claim => "claim",
        Start::Recover => "recover",
    };
    h.record(op, H::Invoke, json!({"hid": hid, "holder": holder}));
    let claimed = Instant::now();
    let ctx = match opts.start {
        Start::Claim => runner.claim(hid),
        Start::Recover => runner.recover(hid),
    };
    match ctx {
        Ok(c) => {
            h.record(op, H::Ok, json!({"hid": hid, "holder": holder, "fence": c.fence()}));
            Ok((c, claimed))
        }
        Err(e) => {
            hist_err(h, op, &e, json!({"hid": hid, "holder": holder}));
            Err(e)
        }
    }
}

/// Where a census resumes: (next_n, count, total) of the last checkpoint,
/// or the start of the range.
fn resume_point(last: Option<&Value>, lo: u64) -> (u64, u64, u64) {
    match last {
        None => (lo, 0, 0),
        Some(st) => (
            st.get("next_n").and_then(Value::as_u64).unwrap_or(lo),
            st.get("count").and_then(Value::as_u64).unwrap_or(0),
            st.get("total").and_then(Value::as_u64).unwrap_or(0),
        ),
    }
}

/// One chunk's count and sum: from the workload service (with its stamp)
/// when there is one, else sieved here.
fn compute_chunk(
    opts: &WorkOptions,
    hid: &HandoffId,
    (next, end): (u64, u64),
    holder: &str,
    fence: dhp_core::Fence,
) -> Result<(u64, u64, Option<String>)> {
    match &opts.workload {
        Some(w) => {
            let got = w.chunk(hid.as_str(), next, end, holder, fence.get()).map_err(workload_error)?;
            Ok((got.count, got.sum, Some(got.stamp)))
        }
        None => {
            let (c, s) = census::chunk(next, end);
            Ok((c, s, None))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dhp_core::config::Config;
    use dhp_core::transport::chain::Chain;

    /// Keeps what it is sent.
    #[derive(Default)]
    struct Capture {
        lines: Vec<(i64, String)>,
    }

    impl Shipper for Capture {
        fn ship_envelope(&mut self, _hid: &str, _env: &Value) -> Result<()> {
            Ok(())
        }
        fn ship_checkpoint(&mut self, _hid: &str, seq: i64, line: &str) -> Result<()> {
            self.lines.push((seq, line.to_string()));
            Ok(())
        }
        fn acked_seq(&mut self, _hid: &str) -> Result<i64> {
            Ok(-1)
        }
    }

    struct Shared(std::sync::Arc<std::sync::Mutex<Capture>>);

    impl Shipper for Shared {
        fn ship_envelope(&mut self, hid: &str, env: &Value) -> Result<()> {
            self.0.lock().unwrap().ship_envelope(hid, env)
        }
        fn ship_checkpoint(&mut self, hid: &str, seq: i64, line: &str) -> Result<()> {
            self.0.lock().unwrap().ship_checkpoint(hid, seq, line)
        }
        fn acked_seq(&mut self, hid: &str) -> Result<i64> {
            self.0.lock().unwrap().acked_seq(hid)
        }
    }

    #[test]
    fn the_worker_ships_the_committed_rows() {
        let dir = tempfile::tempdir().unwrap();
        let r = Runner::open(dir.path(), "w", Config::default()).unwrap();
        let env = dhp_core::envelope::build(
            "prime.census",
            census::inputs(0, 1000, 100),
            census::output_schema(),
            Default::default(),
        )
        .unwrap();
        let hid = r.dispatch(&env).unwrap();
        let shipped = std::sync::Arc::new(std::sync::Mutex::new(Capture::default()));
        let opts = WorkOptions {
            root: Some(dir.path().to_path_buf()),
            start: Start::Claim,
            hid: hid.clone(),
            shipper: Some(Box::new(Shared(shipped.clone()))),
            pace: Duration::ZERO,
            history: History::disabled(),
            stop_after: None,
            liveness: false,
            background_heartbeat: false,
            workload: None,
        };
        let out = run_census(&r, opts).unwrap();
        assert!(matches!(out, Outcome::Completed(_)), "{out:?}");
        let rows = r.checkpoints(&hid).unwrap();
        assert_eq!(rows.len(), 10);
        // What was shipped is exactly what was stored: same state text,
        // hash and `at` (the line a catch-up from the store would make).
        let lines = &shipped.lock().unwrap().lines;
        let mut chain = Chain::after(&hid, None);
        let want: Vec<(i64, String)> = rows.iter().map(|row| (row.seq, chain.line_of_row(row).unwrap())).collect();
        assert_eq!(lines, &want);
        for ((_, line), row) in lines.iter().zip(&rows) {
            let rec = json::parse(line).unwrap();
            assert_eq!(rec["at"], row.at.as_str());
            assert_eq!(rec["state_hash"], row.state_hash.as_str());
        }
    }
}
