//! `--workers N`: the bridge's own prime-census workers. Each claims a
//! pending A2A-bound census handoff, or recovers an orphaned one, and runs
//! it with the same code as `dhp work`. Races with other workers (ours,
//! `dhp work`, the reference's) are settled by the store: a lost claim or
//! recover is simply skipped.

use crate::worker::{self, Start, WorkOptions};
use dhp_core::{Runner, Status};
use dhp_workload::census;
use dhp_workload::history::History;
use serde_json::Value;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Pause between looks for work when there is none.
const IDLE: Duration = Duration::from_millis(250);

pub fn run(w: &Runner, root: Option<&Path>, pace: Duration, stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        match next_job(w) {
            Some((hid, start)) => {
                let opts = WorkOptions {
                    root: root.map(Path::to_path_buf),
                    start,
                    hid: hid.clone(),
                    shipper: None,
                    pace,
                    history: History::disabled(),
                    stop_after: None,
                    liveness: true,
                    background_heartbeat: true,
                    workload: None,
                };
                match worker::run_census(w, opts) {
                    Ok(_) => {
                        tracing::info!(hid = dhp_core::id::short(&hid), worker = w.id().as_str(), "census completed")
                    }
                    // Lost races and fenced-off runs (cancel, orphaned
                    // while paused) end here; the store decides the rest.
                    Err(e) => {
                        tracing::info!(hid = dhp_core::id::short(&hid), worker = w.id().as_str(), error = %e, "census run ended")
                    }
                }
            }
            None => std::thread::sleep(IDLE),
        }
    }
}

/// The first A2A-bound census handoff that is pending or orphaned.
fn next_job(w: &Runner) -> Option<(String, Start)> {
    let hids = w.all_hids().ok()?;
    for hid in hids {
        let Ok(env) = w.envelope_bare(&hid) else { continue };
        if env.pointer("/provenance/a2a_task_id").and_then(Value::as_str).is_none()
            || env.pointer("/task/kind").and_then(Value::as_str) != Some(census::KIND)
        {
            continue;
        }
        match Status::of(&env) {
            Some(Status::Pending) => return Some((hid, Start::Claim)),
            Some(Status::Orphaned) => return Some((hid, Start::Recover)),
            _ => {}
        }
    }
    None
}
