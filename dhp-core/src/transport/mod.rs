//! Moving checkpoints between hosts. The log format ([`log`]) is the
//! protocol; TCP only moves its lines.

pub mod chain;
pub mod log;
pub mod net;

use crate::config::Config;
use crate::error::Result;
use crate::runner::Runner;
use serde_json::Value;
use std::path::PathBuf;

/// Where a worker ships its envelope and checkpoint lines. Implemented by
/// the file log ([`FileShipper`]) and the TCP shipper ([`net::TcpShipper`]).
pub trait Shipper: Send {
    /// Ship the envelope header (idempotent on the receiving side).
    fn ship_envelope(&mut self, hid: &str, env: &Value) -> Result<()>;
    /// Ship one checkpoint line (as made by [`log::checkpoint_line`]).
    fn ship_checkpoint(&mut self, hid: &str, seq: i64, line: &str) -> Result<()>;
    /// Highest seq the destination already holds (-1 if none).
    fn acked_seq(&mut self, hid: &str) -> Result<i64>;
    /// Wait until everything shipped so far is acknowledged (asynchronous
    /// shippers); a no-op for synchronous ones.
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Ships lines to a local (or shared-volume) transport log file. A file
/// whose last line is torn (a crash or a full disk mid-write) is repaired
/// before the next append: the fragment is ended with a newline, so it
/// stays one skipped line and the new line is intact.
#[derive(Debug, Clone)]
pub struct FileShipper {
    /// The transport log file.
    pub path: PathBuf,
    /// Limits (line length) and settings.
    pub cfg: Config,
}

impl Shipper for FileShipper {
    fn ship_envelope(&mut self, _hid: &str, env: &Value) -> Result<()> {
        log::ship_envelope(&self.path, env, &self.cfg)
    }

    fn ship_checkpoint(&mut self, _hid: &str, _seq: i64, line: &str) -> Result<()> {
        log::append_line(&self.path, line, &self.cfg, false)
    }

    fn acked_seq(&mut self, _hid: &str) -> Result<i64> {
        Ok(log::max_seq(&self.path, &self.cfg))
    }
}

/// Bring a destination up to date with the store: ship the envelope, then
/// every checkpoint above what it already holds, each line bound to the
/// handoff and to its predecessor row ([`chain`]). A worker calls this
/// after claim or recover, so a predecessor killed between its commit and
/// its ship leaves the peer short only until the successor starts.
pub fn catch_up(shipper: &mut dyn Shipper, runner: &Runner, hid: &str) -> Result<usize> {
    let env = runner.envelope_bare(hid)?;
    shipper.ship_envelope(hid, &env)?;
    let acked = shipper.acked_seq(hid)?;
    let mut chain = chain::Chain::after(hid, None);
    let mut n = 0;
    for row in runner.checkpoints(hid)? {
        if row.seq <= acked {
            chain.note(row.seq, &row.state_hash);
            continue;
        }
        let line = chain.line_of_row(&row)?;
        shipper.ship_checkpoint(hid, row.seq, &line)?;
        n += 1;
    }
    Ok(n)
}
