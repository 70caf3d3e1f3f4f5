//! The peer's transport log of one handoff as the new network invariants
//! read it: its checkpoint lines in file order, parsed with the oracle
//! (written from the spec, not dhp-core's reader).

use crate::check::ctx::Ctx;
use dhp_oracle as oracle;

/// One checkpoint line of the peer's log.
pub(crate) struct Line {
    pub(crate) seq: i64,
    /// The line's own `state_hash`.
    pub(crate) hash: Option<String>,
    /// Its state hashes to its `state_hash`.
    pub(crate) verifies: bool,
}

/// The checkpoint lines of `hid`'s log in the peer directory, in file
/// order; `Ok(None)` when there is no log.
pub(crate) fn read(cx: &Ctx<'_>, hid: &str) -> crate::error::Result<Option<Vec<Line>>> {
    let path = cx.paths.peer.join(format!("{hid}.log"));
    if !path.exists() {
        return Ok(None);
    }
    let bytes = std::fs::read(&path).map_err(crate::Error::io("reading", &path))?;
    let mut out = Vec::new();
    for line in oracle::log::parse(&bytes, oracle::log::DEFAULT_MAX_LINE_BYTES) {
        if let oracle::log::Line::Checkpoint(c) = line {
            let hash = oracle::state_hash(&c.state).ok();
            let verifies = hash.is_some() && c.state_hash.as_deref() == hash.as_deref();
            out.push(Line { seq: c.seq as i64, hash: c.state_hash.clone(), verifies });
        }
    }
    Ok(Some(out))
}

/// Is this a synchronous TCP round (`--ship tcp`)?
pub(crate) fn sync_tcp(cx: &Ctx<'_>) -> bool {
    cx.cfg.ship == crate::config::Ship::Tcp
}
