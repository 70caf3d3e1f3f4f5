//! The page worker: claims (or recovers) a `wiki.fetch` handoff, fetches
//! each page with a real HTTP client, checkpoints after every page and
//! ships each checkpoint before starting the next fetch. On completion it
//! writes the dataset (CSV) and completes the handoff with a typed result.
//!
//! Progress goes to stdout as JSON lines (`{"event": ..., "t": epoch}`), so
//! a driver can follow it; diagnostics go to stderr.
//!
//! Checkpoint state: `{"next": N, "attempt": A, "pages": [PageRecord…]}`
//! — `next` is the index of the first page not yet fetched, so a successor
//! resumes exactly there and never refetches a checkpointed page.

use crate::fetch::{Fetcher, Page};
use crate::record::{self, PageRecord};
use dhp_core::envelope::{now, utcnow_iso};
use dhp_core::transport::{catch_up, log, Shipper};
use dhp_core::{liveness, Runner};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// How the worker gets the handoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    Claim,
    Recover,
}

/// One run of the page worker.
pub struct Options {
    pub root: PathBuf,
    pub worker_id: String,
    /// Label of the host this worker runs on (goes into the records).
    pub host: String,
    pub start: Start,
    pub hid: String,
    /// Base URL of the summary API (`https://en.wikipedia.org`, or the mirror).
    pub base_url: String,
    pub http_timeout: Duration,
    /// Where checkpoints are shipped, if anywhere.
    pub shipper: Option<Box<dyn Shipper>>,
    /// Where the dataset goes on completion.
    pub out_csv: PathBuf,
    /// Fetch attempts per page before giving up.
    pub fetch_tries: u32,
}

/// Emit one progress event on stdout (flushed).
pub fn emit(event: &str, mut fields: Value) {
    if let Some(m) = fields.as_object_mut() {
        m.insert("event".into(), json!(event));
        m.insert("t".into(), json!(now()));
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{fields}");
    let _ = out.flush();
}

/// The title list of a `wiki.fetch` envelope.
pub fn titles_of(env: &Value) -> anyhow::Result<Vec<String>> {
    let list = env
        .pointer("/task/inputs/inline/titles")
        .and_then(Value::as_array)
        .ok_or_else(|| anyhow::anyhow!("handoff inputs have no inline.titles list"))?;
    list.iter()
        .map(|t| t.as_str().map(str::to_string).ok_or_else(|| anyhow::anyhow!("a title is not a string")))
        .collect()
}

/// The output schema of a `wiki.fetch` handoff.
pub fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "pages": {"type": "integer", "minimum": 0},
            "dataset_sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
            "resumed_from": {"type": "integer", "minimum": 0},
            "fetched_this_run": {"type": "integer", "minimum": 0},
            "fetched_by": {"type": "object"},
        },
        "required": ["pages", "dataset_sha256", "resumed_from", "fetched_this_run", "fetched_by"],
    })
}

/// The inputs of a `wiki.fetch` handoff.
pub fn inputs(titles: &[String], source: &str, seed: u64) -> Value {
    json!({"inline": {
        "titles": titles,
        "endpoint": crate::mirror::SUMMARY_PREFIX.to_string() + "{title}",
        "source": source,
        "seed": seed,
    }})
}

fn parse_state(st: &Value) -> anyhow::Result<(u64, u64, Vec<PageRecord>)> {
    let next = st.get("next").and_then(Value::as_u64).ok_or_else(|| anyhow::anyhow!("checkpoint has no next"))?;
    let attempt = st.get("attempt").and_then(Value::as_u64).unwrap_or(0);
    let pages: Vec<PageRecord> = serde_json::from_value(st.get("pages").cloned().unwrap_or(json!([])))?;
    anyhow::ensure!(pages.len() as u64 == next, "checkpoint lists {} pages but next is {next}", pages.len());
    Ok((next, attempt, pages))
}

/// Run the worker to completion. Returns the completion result.
pub fn run(runner: &Runner, mut opts: Options) -> anyhow::Result<Value> {
    let hid = opts.hid.clone();
    let pid = std::process::id();
    // Same-host liveness: a supervisor on this host notices our death at once.
    let _token = match dhp_core::WorkerId::parse(&opts.worker_id).and_then(|w| liveness::publish(&opts.root, &w)) {
        Ok(t) => Some(t),
        Err(e) => {
            eprintln!("demo-page-worker: running lease-only: {e}");
            None
        }
    };
    let mut ctx = match opts.start {
        Start::Claim => runner.claim(&hid)?,
        Start::Recover => runner.recover(&hid)?,
    };
    ctx.start_heartbeat(None);
    let env = runner.envelope_bare(&hid)?;
    let titles = titles_of(&env)?;
    let dhp_attempt = env.pointer("/execution/attempt").and_then(Value::as_u64).unwrap_or(0);
    let (mut next, prev_attempt, mut pages) = match runner.last_checkpoint(&hid)? {
        None => (0, 0, Vec::new()),
        Some(st) => parse_state(&st)?,
    };
    // 1-based run number: one past both DHP's attempt count on this store
    // and the run that wrote the checkpoint we resume from (a handoff that
    // crossed hosts by transport log keeps its DHP attempt count).
    let attempt = (dhp_attempt + 1).max(prev_attempt + 1);
    let resumed_from = next;
    emit("claimed", json!({"worker": opts.worker_id, "host": opts.host, "pid": pid, "hid": hid, "fence": ctx.fence()}));
    let mut reshipped = 0;
    let mut peer_had = None;
    let mut peer_wait_s = None;
    if let Some(s) = opts.shipper.as_deref_mut() {
        // Bring the peer up to date first: envelope header, then anything a
        // predecessor committed but did not get acknowledged.
        let t = std::time::Instant::now();
        reshipped = catch_up(s, runner, &hid)?;
        peer_had = Some(s.acked_seq(&hid)?);
        peer_wait_s = Some(t.elapsed().as_secs_f64());
    }
    emit(
        "start",
        json!({"worker": opts.worker_id, "host": opts.host, "pid": pid, "hid": hid, "fence": ctx.fence(),
               "mode": if opts.start == Start::Claim { "claim" } else { "recover" },
               "attempt": attempt, "resume_index": next, "pages": titles.len(),
               "reshipped": reshipped, "peer_acked_seq": peer_had, "peer_wait_s": peer_wait_s}),
    );
    let fetcher = Fetcher::new(&opts.base_url, opts.http_timeout);
    let mut fetched_this_run = 0u64;
    while (next as usize) < titles.len() {
        let i = next as usize;
        let title = &titles[i];
        emit("fetch_start", json!({"worker": opts.worker_id, "index": i, "title": title}));
        let page = fetch_with_retries(&fetcher, &opts, i, title)?;
        let rec = PageRecord {
            index: next,
            title: title.clone(),
            url: page.url.clone(),
            bytes: page.body.len() as u64,
            sha256: hex::encode(Sha256::digest(&page.body)),
            fetched_by: opts.worker_id.clone(),
            host: opts.host.clone(),
            attempt,
            pid,
            http_status: page.status,
            elapsed_ms: page.elapsed.as_millis() as u64,
            fetched_at: utcnow_iso(),
        };
        pages.push(rec.clone());
        next += 1;
        fetched_this_run += 1;
        let state = json!({"next": next, "attempt": attempt, "pages": pages});
        let seq = ctx.checkpoint(&state)?;
        let mut acked = None;
        if let Some(s) = opts.shipper.as_deref_mut() {
            ship_committed(runner, s, &hid, seq, &state)?;
            acked = Some(seq);
        }
        ctx.note_step(1)?;
        emit(
            "page",
            json!({"worker": opts.worker_id, "index": i, "title": title, "bytes": rec.bytes,
                   "sha256": rec.sha256, "elapsed_ms": rec.elapsed_ms, "seq": seq, "shipped": acked,
                   "done": next}),
        );
    }
    if let Some(s) = opts.shipper.as_deref_mut() {
        s.flush()?;
    }
    let result = write_dataset(&opts, &pages, resumed_from, fetched_this_run)?;
    ctx.complete(&result)?;
    emit("complete", json!({"worker": opts.worker_id, "hid": hid, "result": result, "dataset": opts.out_csv}));
    Ok(result)
}

/// Fetch page `i`, retrying up to `fetch_tries` times (each retry reported).
fn fetch_with_retries(fetcher: &Fetcher, opts: &Options, i: usize, title: &str) -> anyhow::Result<Page> {
    let mut tries = 0;
    loop {
        tries += 1;
        match fetcher.fetch(title) {
            Ok(p) => return Ok(p),
            Err(e) if tries < opts.fetch_tries.max(1) => {
                emit("fetch_retry", json!({"worker": opts.worker_id, "index": i, "error": e.to_string()}));
                std::thread::sleep(Duration::from_millis(300 * u64::from(tries)));
            }
            Err(e) => return Err(e.context(format!("page {} ({title}) failed after {tries} tries", i + 1))),
        }
    }
}

/// Ship exactly what the store committed as checkpoint `seq` (same text,
/// hash, time).
fn ship_committed(runner: &Runner, s: &mut dyn Shipper, hid: &str, seq: i64, state: &Value) -> anyhow::Result<()> {
    let row = runner
        .last_checkpoint_row(hid)?
        .filter(|r| r.seq == seq)
        .ok_or_else(|| anyhow::anyhow!("checkpoint {seq} vanished from the store"))?;
    let line = log::checkpoint_line(seq, state, &row.state_hash, &row.at)?;
    s.ship_checkpoint(hid, seq, &line)?;
    Ok(())
}

/// Write the dataset (CSV); the completion result.
fn write_dataset(
    opts: &Options,
    pages: &[PageRecord],
    resumed_from: u64,
    fetched_this_run: u64,
) -> anyhow::Result<Value> {
    let dataset_sha256 = record::write_csv(&opts.out_csv, pages)?;
    let mut by: serde_json::Map<String, Value> = serde_json::Map::new();
    for p in pages {
        let n = by.get(&p.fetched_by).and_then(Value::as_u64).unwrap_or(0);
        by.insert(p.fetched_by.clone(), json!(n + 1));
    }
    Ok(json!({
        "pages": pages.len(),
        "dataset_sha256": dataset_sha256,
        "resumed_from": resumed_from,
        "fetched_this_run": fetched_this_run,
        "fetched_by": by,
    }))
}
