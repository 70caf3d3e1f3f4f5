//! Answering frames: the hello (token, handoff, `ack_seq`), the envelope
//! header, and checkpoints (appended only right after the unbroken run of
//! seqs; a duplicate is acked again, a gap or a conflict refused).

use super::client_frame::{CheckpointFrame, ClientFrame, FrameError, Hello};
use super::hidlog::HidLog;
use super::stats::{bump, hello_refused};
use super::Srv;
use crate::config::Config;
use crate::envelope::{self, utcnow_iso};
use crate::error::{Error, Result};
use crate::runner::checked_state;
use crate::transport::chain;
use crate::transport::log;
use crate::TransportKind;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use subtle::ConstantTimeEq;
use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

/// Why a checkpoint is not acknowledged; both carry the seq the server
/// expects next.
enum SeqRefusal {
    Gap { next: i64 },
    Conflict { next: i64 },
}

/// A reply frame plus whether the connection ends after it.
pub(super) struct Reply {
    pub(super) body: Value,
    pub(super) close: bool,
    /// The reply may leave only once the session's log is synced.
    pub(super) durable: bool,
}

pub(super) fn ok(body: Value) -> Reply {
    Reply { body, close: false, durable: false }
}

pub(super) fn refuse(msg: impl Into<String>) -> Reply {
    Reply { body: json!({"ok": false, "error": msg.into()}), close: false, durable: false }
}

pub(super) fn refuse_and_close(msg: impl Into<String>) -> Reply {
    Reply { body: json!({"ok": false, "error": msg.into()}), close: true, durable: false }
}

/// What a connection is bound to after a good hello.
pub(super) struct Session {
    hid: String,
    log: Arc<AsyncMutex<HidLog>>,
}

impl Srv {
    fn hid_log(&self, hid: &str) -> Result<Arc<AsyncMutex<HidLog>>> {
        let path = log::log_path(&self.cfg.logdir, hid)?;
        let mut cache = self.logs.lock().unwrap_or_else(|p| p.into_inner());
        Ok(cache.get(hid, path))
    }

    /// Run `f` on a handoff log under its lock. Scanning a log (first use,
    /// or changed behind our back) runs on the blocking pool; a `stat` and
    /// an append to page cache run inline.
    async fn with_log<T: Send + 'static>(
        &self,
        log: &Arc<AsyncMutex<HidLog>>,
        f: impl FnOnce(&mut HidLog, &Config) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let mut guard: OwnedMutexGuard<HidLog> = log.clone().lock_owned().await;
        let cfg = self.cfg.cfg.clone();
        let work = move |g: &mut HidLog| {
            let r = g.refresh(&cfg).and_then(|_| f(g, &cfg));
            if r.is_err() {
                // Unknown state on disk: re-read before the next use.
                g.loaded = false;
                g.out.reset();
            }
            r
        };
        if guard.loaded {
            work(&mut guard)
        } else {
            tokio::task::spawn_blocking(move || work(&mut guard))
                .await
                .map_err(|e| Error::transport_from(TransportKind::Server, format!("log writer task failed: {e}"), e))?
        }
    }

    fn token_ok(&self, presented: Option<&str>) -> bool {
        let Some(want) = &self.token_digest else { return true };
        let Some(got) = presented else { return false };
        let got: [u8; 32] = Sha256::digest(got.as_bytes()).into();
        bool::from(got.ct_eq(want))
    }

    async fn hello(&self, msg: Hello) -> (Reply, Option<Session>) {
        if !self.token_ok(msg.token.as_deref()) {
            hello_refused(&self.stats);
            tracing::warn!("transport: rejected a client (bad token)");
            return (refuse_and_close("bad token"), None);
        }
        let hid = msg.handoff_id.as_deref().unwrap_or("");
        let log = match envelope::check_hid(hid).and_then(|_| self.hid_log(hid)) {
            Ok(l) => l,
            Err(e) => {
                hello_refused(&self.stats);
                return (refuse_and_close(e.to_string()), None);
            }
        };
        let me = hid.to_string();
        let ack = self
            .with_log(&log, move |l, _| {
                Ok(if l.header.as_ref().is_some_and(|h| *h != me) { -1 } else { l.seqs.prefix_end() })
            })
            .await;
        match ack {
            Ok(ack) => {
                bump(&self.stats.hellos_accepted);
                tracing::info!(hid = &hid[..12], ack, "transport: client shipping");
                (ok(json!({"ok": true, "ack_seq": ack})), Some(Session { hid: hid.to_string(), log }))
            }
            Err(e) => {
                hello_refused(&self.stats);
                tracing::error!(error = %e, "transport: cannot read log");
                (refuse_and_close(format!("server cannot read log: {e}")), None)
            }
        }
    }

    async fn envelope(&self, s: &Session, env: Value) -> Reply {
        let hid = match envelope::verify(&env) {
            Ok(h) => h,
            Err(Error::Tamper { detail: m, .. }) => return refuse(format!("envelope identity failed: {m}")),
            Err(e) => return refuse(format!("bad envelope: {e}")),
        };
        if hid != s.hid {
            return refuse("envelope is for a different handoff than the hello");
        }
        let line = match log::envelope_line(&env) {
            Ok(l) if super::super::over_cap(l.len(), self.cfg.cfg.transport_max_line_bytes) => {
                return refuse("envelope line exceeds max line bytes")
            }
            Ok(l) => l,
            Err(e) => return refuse(format!("bad envelope: {e}")),
        };
        let want = s.hid.clone();
        let r = self
            .with_log(&s.log, move |l, _| match &l.header {
                Some(h) if *h == want => l.journal_line(&line).map(|_| None),
                Some(h) => Ok(Some(format!("log already holds handoff {h}"))),
                None => {
                    l.append(&line)?;
                    l.header = Some(want);
                    Ok(None)
                }
            })
            .await;
        match r {
            Ok(None) => {
                bump(&self.stats.envelopes);
                Reply { durable: true, ..ok(json!({"ok": true})) }
            }
            Ok(Some(m)) => refuse(m),
            Err(e) => refuse(format!("server cannot write log: {e}")),
        }
    }

    async fn checkpoint(&self, s: &Session, msg: CheckpointFrame) -> Reply {
        if let Some(h) = &msg.handoff_id {
            if h.as_deref() != Some(s.hid.as_str()) {
                return refuse("checkpoint is for a different handoff than the hello");
            }
        }
        let (Some(seq), Some(state)) = (msg.seq, &msg.state) else {
            return refuse("bad checkpoint frame");
        };
        let hash = match checked_state(state, &self.cfg.cfg) {
            Ok((_, h)) => h,
            Err(e) => return refuse(e.to_string()),
        };
        if msg.state_hash.as_deref() != Some(hash.as_str()) {
            return refuse("hash mismatch");
        }
        // A bound frame (docs/log-chain.md) keeps its binding in the log.
        let prev = match chain::claimed_prev(&msg.binding, &s.hid, seq) {
            Ok(p) => p.map(str::to_string),
            Err(e) => return refuse(format!("binding mismatch: {e}")),
        };
        let bound = msg.binding.get("hid").is_some() || prev.is_some();
        let at = msg.at.clone().unwrap_or_else(utcnow_iso);
        let line = if bound {
            chain::bound_checkpoint_line(&s.hid, seq, state, &hash, prev.as_deref(), &at)
        } else {
            log::checkpoint_line(seq, state, &hash, &at)
        };
        let line = match line {
            Ok(l) if super::super::over_cap(l.len(), self.cfg.cfg.transport_max_line_bytes) => {
                return refuse("checkpoint line exceeds max line bytes")
            }
            Ok(l) => l,
            Err(e) => return refuse(e.to_string()),
        };
        let want = s.hid.clone();
        let r = self
            .with_log(&s.log, move |l, cfg| {
                match &l.header {
                    None => return Ok(Err(Err("no envelope for this handoff yet: send the envelope first"))),
                    Some(h) if *h != want => return Ok(Err(Err("log holds another handoff"))),
                    Some(_) => {}
                }
                // Only the seq right after the unbroken run from 0 is
                // appended: an ack past a hole would tell the shipper it
                // may forget lines the peer never got.
                let next = l.seqs.prefix_end() + 1;
                if seq > next {
                    return Ok(Err(Ok(SeqRefusal::Gap { next })));
                }
                if seq < next {
                    return match l.logged_hash(seq, cfg)? {
                        Some(h) if h != hash => Ok(Err(Ok(SeqRefusal::Conflict { next }))),
                        _ => l.journal_line(&line).map(|_| Ok(false)),
                    };
                }
                // A bound frame (docs/log-chain.md) must follow the
                // checkpoint before it.
                if let (Some(p), true) = (&prev, seq > 0) {
                    if l.logged_hash(seq - 1, cfg)?.is_some_and(|h| h != *p) {
                        return Ok(Err(Err("binding mismatch: prev is not the state hash of the checkpoint before")));
                    }
                }
                l.append(&line)?;
                l.seqs.insert(seq);
                l.remember(seq, hash);
                Ok(Ok(true))
            })
            .await;
        match r {
            Ok(Ok(appended)) => {
                bump(if appended { &self.stats.checkpoints_appended } else { &self.stats.checkpoints_duplicate });
                // A duplicate too: the earlier copy may not be synced yet.
                Reply { durable: true, ..ok(json!({"ok": true, "seq": seq})) }
            }
            Ok(Err(Ok(SeqRefusal::Gap { next }))) => {
                bump(&self.stats.checkpoints_gap);
                tracing::info!(hid = &s.hid[..12], seq, expect_seq = next, "transport: checkpoint past a gap refused");
                Reply {
                    body: json!({"ok": false, "error": format!("gap: expected seq {next}, got {seq}"), "expect_seq": next}),
                    close: false,
                    durable: false,
                }
            }
            Ok(Err(Ok(SeqRefusal::Conflict { next }))) => {
                bump(&self.stats.checkpoints_conflict);
                tracing::warn!(hid = &s.hid[..12], seq, "transport: conflicting checkpoint refused");
                Reply {
                    body: json!({
                        "ok": false,
                        "error": format!("conflict: seq {seq} is logged with another state_hash"),
                        "expect_seq": next,
                    }),
                    close: false,
                    durable: false,
                }
            }
            Ok(Err(Err(m))) => refuse(m),
            Err(e) => refuse(format!("server cannot write log: {e}")),
        }
    }

    /// Answer one complete line.
    pub(super) async fn frame(&self, session: &mut Option<Session>, raw: &[u8]) -> Reply {
        let frame = match ClientFrame::parse(raw) {
            Ok(f) => Ok(f),
            Err(e @ (FrameError::NotJson(_) | FrameError::NotObject)) => return self.bad(session, e.to_string()),
            Err(e @ FrameError::UnknownType) => Err(e),
        };
        let Some(s) = session.as_ref() else {
            let Ok(ClientFrame::Hello(hello)) = frame else {
                hello_refused(&self.stats);
                return refuse_and_close("want hello");
            };
            let (reply, s) = self.hello(hello).await;
            *session = s;
            return reply;
        };
        match frame {
            Ok(ClientFrame::Envelope(env)) => self.envelope(s, env).await,
            Ok(ClientFrame::Checkpoint(c)) => self.checkpoint(s, c).await,
            Ok(ClientFrame::Bye) => Reply { body: json!({"ok": true}), close: true, durable: false },
            Ok(ClientFrame::Hello(_)) => refuse("already said hello"),
            Err(e) => refuse(e.to_string()),
        }
    }

    fn bad(&self, session: &Option<Session>, msg: String) -> Reply {
        if session.is_none() {
            hello_refused(&self.stats);
            refuse_and_close(msg)
        } else {
            refuse(msg)
        }
    }
}
