//! What landed on the peer, per handoff: every checkpoint the store
//! committed, looked up in the peer's log (the invariants' own reader,
//! `invariants::peer_log`, i.e. dhp-oracle), and the work each faulted
//! worker redid (the `rework` invariant's own count). The net-chaos
//! scenario reports these as "N/N checkpoints landed on the peer, rework K".

use super::ctx::Ctx;
use super::invariants::{peer_log, redone};
use crate::error::Result;
use crate::hist;
use crate::round::Paths;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One handoff's checkpoints in the store against the peer's log.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Landing {
    /// The handoff.
    pub hid: String,
    /// Its final status in the store.
    pub status: String,
    /// Checkpoints the store committed.
    pub committed: u64,
    /// Of those, on the peer with the store's hash and a verifying line.
    pub landed: u64,
    /// Committed seqs the peer's log does not have.
    pub missing: Vec<i64>,
    /// Committed seqs the peer has only with another hash, or not verifying.
    pub altered: Vec<i64>,
    /// Faulted workers and the chunks (their `next_n`) each computed but did
    /// not commit itself — lost, or recomputed by its successor.
    pub rework: Vec<(String, Vec<u64>)>,
}

/// [`Landing`] of every dispatched handoff of the round directory `dir`.
pub fn landing(dir: &Path) -> Result<Vec<Landing>> {
    let paths = Paths::new(dir);
    let meta = super::read_meta(&paths.meta)?;
    let history = hist::load(&paths.history)?;
    let store = super::load::load_round_store(&paths.store)?;
    let mut ix = super::history::index(&history);
    super::indeterminate::mark(&mut ix, meta["t_end"].as_f64().unwrap_or(f64::INFINITY));
    let audit = super::audit::AuditIx::load(&paths.store)?;
    let cfg = super::round_config(&meta, &paths.meta)?;
    let cx = Ctx::new(dir, &meta, &cfg, &ix, &store, audit.as_ref());
    let redone = redone(&cx);
    let mut out = Vec::new();
    for hid in &cx.hids {
        let Some(h) = store.get(hid) else { continue };
        let lines = peer_log::read(&cx, hid)?.unwrap_or_default();
        let (mut landed, mut missing, mut altered) = (0, Vec::new(), Vec::new());
        for c in &h.ckpts {
            let at: Vec<_> = lines.iter().filter(|l| l.seq == c.seq).collect();
            if at.is_empty() {
                missing.push(c.seq);
            } else if at.iter().any(|l| l.verifies && l.hash.as_deref() == Some(c.state_hash.as_str())) {
                landed += 1;
            } else {
                altered.push(c.seq);
            }
        }
        out.push(Landing {
            hid: hid.clone(),
            status: h.status.clone(),
            committed: h.ckpts.len() as u64,
            landed,
            missing,
            altered,
            rework: redone.iter().filter(|r| &r.1 == hid).map(|r| (r.0.clone(), r.2.clone())).collect(),
        });
    }
    Ok(out)
}
