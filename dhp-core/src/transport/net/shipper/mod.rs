//! The TCP shipper: a background thread owns the connection and ships a
//! queue of lines; callers wait (boundedly) for acknowledgements.
//!
//! Every line goes to the local buffer log first (when one is configured),
//! then into the queue. The thread connects, says hello, learns the
//! server's `ack_seq`, drops what the server already holds, replays from the
//! local buffer log what it lacks, re-sends the envelope header, and then
//! pipelines up to `window` frames at a time. On any I/O failure it
//! reconnects with exponential backoff, forever; a caller never waits longer
//! than `call_timeout` and gets [`Error::Transport`] when that runs out (the
//! line stays queued and in the local log).

mod buffer;
mod options;
mod pump;
mod queue;

pub use options::{BufferLog, ShipMode, ShipperOptions};

use crate::envelope;
use crate::error::{Error, Result};
use crate::transport::log;
use crate::transport::net::{over_cap, tls, Appender};
use crate::transport::Shipper;
use crate::TransportKind;
use buffer::{scan_local, LocalLog};
use pump::Pump;
use queue::{Item, Refusal, Shared, State, MAX_IDLE_QUEUES};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Ships checkpoint lines to a [`run`](super::run) server or the
/// reference's `TransportServer`.
pub struct TcpShipper {
    shared: Arc<Shared>,
    opts: ShipperOptions,
    addr: String,
    locals: HashMap<String, LocalLog>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for TcpShipper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpShipper").field("addr", &self.addr).field("mode", &self.opts.mode).finish()
    }
}

fn check_addr(addr: &str) -> Result<()> {
    let bad = || Error::transport(TransportKind::Address, format!("ship-to address {addr:?} is not HOST:PORT"));
    let (host, port) = addr.rsplit_once(':').ok_or_else(bad)?;
    if host.is_empty() || port.parse::<u16>().map_or(true, |p| p == 0) {
        return Err(bad());
    }
    Ok(())
}

impl TcpShipper {
    /// A shipper to `addr` (`HOST:PORT`). Connects lazily, in the
    /// background.
    pub fn new(addr: &str, opts: ShipperOptions) -> Result<Self> {
        check_addr(addr)?;
        opts.cfg.validate()?;
        if opts.call_timeout.is_zero() || opts.io_timeout.is_zero() || opts.connect_timeout.is_zero() {
            return Err(Error::config("shipper timeouts must be > 0"));
        }
        let mut opts = opts;
        // A caller must see at least a few attempts within its wait.
        opts.backoff_max = opts.backoff_max.min(opts.call_timeout / 4).max(Duration::from_millis(1));
        opts.backoff_initial = opts.backoff_initial.min(opts.backoff_max);
        // Read and check the TLS files now, not at the first connect.
        let tls = match &opts.tls {
            Some(t) => Some((t.config()?, tls::server_name(addr)?)),
            None => None,
        };
        let shared = Arc::new(Shared { st: Mutex::new(State::default()), work: Condvar::new(), done: Condvar::new() });
        let thread = {
            let (shared, addr, opts) = (shared.clone(), addr.to_string(), opts.clone());
            std::thread::Builder::new()
                .name("dhp-ship".into())
                .spawn(move || Pump { shared, addr, opts, tls }.run())
                .map_err(|e| Error::transport(TransportKind::Start, format!("cannot start the shipping thread: {e}")))?
        };
        Ok(TcpShipper { shared, opts, addr: addr.to_string(), locals: HashMap::new(), thread: Some(thread) })
    }

    /// Lines queued and not yet acknowledged.
    pub fn unacked(&self) -> usize {
        self.shared.lock().unacked
    }

    /// Handoffs this shipper holds state for (queues, open local buffer
    /// logs): bounded, whatever number of handoffs it has shipped — the
    /// unfinished ones plus up to about a thousand idle ones.
    pub fn tracked_handoffs(&self) -> usize {
        self.shared.lock().queues.len().max(self.locals.len())
    }

    /// Flush, say bye, and stop the shipping thread.
    pub fn close(mut self) -> Result<()> {
        let r = self.flush();
        self.stop(true);
        r
    }

    fn stop(&mut self, join: bool) {
        self.shared.lock().stop = true;
        self.shared.work.notify_all();
        if let Some(t) = self.thread.take() {
            if join {
                let _ = t.join();
            }
        }
    }

    fn deadline(&self) -> Instant {
        Instant::now() + self.opts.call_timeout
    }

    fn timeout_error(&self, st: &State, what: &str) -> Error {
        Error::transport(
            TransportKind::Unacknowledged,
            format!(
                "{what} not acknowledged by {} within {:.1}s (kept {}; last error: {})",
                self.addr,
                self.opts.call_timeout.as_secs_f64(),
                if self.opts.buffer.is_some() { "in the local buffer log and queued" } else { "queued" },
                st.last_error.as_deref().unwrap_or("none")
            ),
        )
    }

    /// Wait for one ticket's outcome.
    fn wait_ticket(&self, hid: &str, ticket: u64, what: &str) -> Result<()> {
        let deadline = self.deadline();
        let mut st = self.shared.lock();
        loop {
            if let Some(r) = st.outcomes.remove(&ticket) {
                return r.map_err(Refusal::into_error);
            }
            if let Some(r) = st.queues.get(hid).and_then(|q| q.rejected.as_ref()) {
                let e = r.connection_error();
                st.waiting.remove(&ticket);
                return Err(e);
            }
            let now = Instant::now();
            if now >= deadline {
                st.waiting.remove(&ticket);
                return Err(self.timeout_error(&st, what));
            }
            st = self.shared.done.wait_timeout(st, deadline - now).map(|(g, _)| g).unwrap_or_else(|p| p.into_inner().0);
        }
    }

    fn take_failure(&self) -> Result<()> {
        match self.shared.lock().failures.pop_front() {
            Some(f) => Err(f.into_error()),
            None => Ok(()),
        }
    }

    fn local(&mut self, hid: &str) -> Result<Option<&mut LocalLog>> {
        let Some(buf) = &self.opts.buffer else { return Ok(None) };
        if !self.locals.contains_key(hid) {
            let path = buf.path_for(hid)?;
            if matches!(buf, BufferLog::File(_)) && !self.locals.is_empty() {
                return Err(Error::transport(
                    TransportKind::Address,
                    format!(
                        "buffer log {} already holds another handoff; use a directory buffer for several",
                        path.display()
                    ),
                ));
            }
            if self.locals.len() >= MAX_IDLE_QUEUES {
                // Close the buffer logs of handoffs with nothing in flight
                // (rescanned if they ship again), so files stay bounded.
                let st = self.shared.lock();
                self.locals.retain(|h, _| st.queues.get(h).is_some_and(|q| !q.idle()));
            }
            let (seqs, torn) = scan_local(&path, hid, &self.opts.cfg)?;
            self.locals.insert(hid.to_string(), LocalLog { out: Appender::new(path, torn), seqs });
        }
        Ok(self.locals.get_mut(hid))
    }

    fn rejected(&self, hid: &str) -> Option<Error> {
        self.shared.lock().queues.get(hid).and_then(|q| q.rejected.as_ref()).map(Refusal::connection_error)
    }
}

impl Shipper for TcpShipper {
    fn ship_envelope(&mut self, hid: &str, env: &Value) -> Result<()> {
        envelope::check_hid(hid)?;
        let owner = envelope::verify(env)?;
        if owner != hid {
            return Err(Error::validation(format!("envelope is for handoff {owner}, not {hid}")));
        }
        let line = log::envelope_line(env)?;
        if over_cap(line.len(), self.opts.cfg.transport_max_line_bytes) {
            return Err(Error::Oversize {
                what: "transport line",
                size: line.len() + 1,
                limit: self.opts.cfg.transport_max_line_bytes,
            });
        }
        let cfg = self.opts.cfg.clone();
        if let Some(l) = self.local(hid)? {
            // First writer wins: only an empty or missing log gets a header.
            log::ship_envelope(&l.out.path, env, &cfg)?;
        }
        let sync = self.opts.mode == ShipMode::Sync;
        let ticket = {
            let mut st = self.shared.lock();
            let t = st.ticket();
            let q = st.queues.entry(hid.to_string()).or_default();
            q.envelope = Some(line.into());
            q.env_acked = false;
            q.env_ticket = t;
            if sync {
                st.waiting.insert(t);
            }
            t
        };
        self.shared.work.notify_all();
        if sync {
            self.wait_ticket(hid, ticket, "envelope")
        } else {
            self.take_failure()
        }
    }

    fn ship_checkpoint(&mut self, hid: &str, seq: i64, line: &str) -> Result<()> {
        envelope::check_hid(hid)?;
        if seq < 0 {
            return Err(Error::validation(format!("checkpoint seq {seq} is negative")));
        }
        if line.contains('\n') {
            return Err(Error::validation("a transport line cannot contain a newline"));
        }
        let max = self.opts.cfg.transport_max_line_bytes;
        if over_cap(line.len(), max) {
            return Err(Error::Oversize { what: "transport line", size: line.len() + 1, limit: max });
        }
        if let Some(e) = self.rejected(hid) {
            return Err(e);
        }
        if let Some(l) = self.local(hid)? {
            if !l.seqs.contains(seq) {
                l.out.append(line.as_bytes())?;
                l.seqs.insert(seq);
            }
        }
        let sync = self.opts.mode == ShipMode::Sync;
        let ticket = {
            let mut st = self.shared.lock();
            let fresh = st.ticket();
            let q = st.queues.entry(hid.to_string()).or_default();
            // The same seq may already be queued (replayed from the buffer).
            let ticket = match q.items.iter().rev().find(|i| i.seq == seq) {
                Some(i) => i.ticket,
                None => {
                    q.items.push_back(Item { ticket: fresh, seq, line: line.into() });
                    st.unacked += 1;
                    fresh
                }
            };
            if sync {
                st.waiting.insert(ticket);
            }
            ticket
        };
        self.shared.work.notify_all();
        match self.opts.mode {
            ShipMode::Sync => self.wait_ticket(hid, ticket, &format!("checkpoint {seq}")),
            ShipMode::Async { max_lag } => {
                self.take_failure()?;
                let deadline = self.deadline();
                let mut st = self.shared.lock();
                while st.unacked > max_lag {
                    let now = Instant::now();
                    if now >= deadline {
                        return Err(self.timeout_error(&st, &format!("backlog of {} lines", st.unacked)));
                    }
                    st = self
                        .shared
                        .done
                        .wait_timeout(st, deadline - now)
                        .map(|(g, _)| g)
                        .unwrap_or_else(|p| p.into_inner().0);
                }
                Ok(())
            }
        }
    }

    fn acked_seq(&mut self, hid: &str) -> Result<i64> {
        envelope::check_hid(hid)?;
        let deadline = self.deadline();
        let mut st = self.shared.lock();
        let q = st.queues.entry(hid.to_string()).or_default();
        if let Some(a) = q.server_ack {
            return Ok(a);
        }
        q.want_hello = true;
        // Counted, so the entry is not pruned before we read its ack.
        q.waiters += 1;
        self.shared.work.notify_all();
        let r = loop {
            let q = st.queues.entry(hid.to_string()).or_default();
            if let Some(a) = q.server_ack {
                break Ok(a);
            }
            if let Some(r) = &q.rejected {
                break Err(r.connection_error());
            }
            let now = Instant::now();
            if now >= deadline {
                break Err(self.timeout_error(&st, "hello"));
            }
            st = self.shared.done.wait_timeout(st, deadline - now).map(|(g, _)| g).unwrap_or_else(|p| p.into_inner().0);
        };
        if let Some(q) = st.queues.get_mut(hid) {
            q.waiters = q.waiters.saturating_sub(1);
        }
        r
    }

    fn flush(&mut self) -> Result<()> {
        let deadline = self.deadline();
        {
            let mut st = self.shared.lock();
            loop {
                let envs_pending =
                    st.queues.values().any(|q| q.envelope.is_some() && !q.env_acked && q.rejected.is_none());
                if st.unacked == 0 && !envs_pending {
                    break;
                }
                if let Some(r) = st.queues.values().find_map(|q| q.rejected.as_ref()) {
                    return Err(r.connection_error());
                }
                let now = Instant::now();
                if now >= deadline {
                    return Err(self.timeout_error(&st, &format!("flush of {} lines", st.unacked)));
                }
                st = self
                    .shared
                    .done
                    .wait_timeout(st, deadline - now)
                    .map(|(g, _)| g)
                    .unwrap_or_else(|p| p.into_inner().0);
            }
        }
        self.take_failure()
    }
}

impl Drop for TcpShipper {
    fn drop(&mut self) {
        if self.thread.is_none() {
            return;
        }
        // Best effort: give a healthy connection a moment to drain the
        // backlog (the lines are in the local buffer log regardless); a
        // peer that is down or refusing us gets no extra wait.
        let deadline = Instant::now() + self.opts.call_timeout.min(Duration::from_secs(2));
        let mut st = self.shared.lock();
        while st.unacked > 0 && st.last_error.is_none() {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            st = self.shared.done.wait_timeout(st, deadline - now).map(|(g, _)| g).unwrap_or_else(|p| p.into_inner().0);
        }
        drop(st);
        // Do not join: the thread may sit in a connect or read for up to
        // its timeout; it exits at its next look at `stop`.
        self.stop(false);
    }
}
