//! Leadership (§7.1): one row, `leadership.id = 1`; a supervisor renews
//! its own live term or takes an absent or expired one (at once when the
//! leader's liveness token shows its process gone), and resigns on a clean
//! stop.

use super::{Supervisor, RENEW_WHEN_LEFT};
use crate::error::Result;
use crate::store::{with_tx, Leadership, Mode};
use std::sync::atomic::Ordering;

impl Supervisor {
    /// Renew leadership if held, else take it if absent or expired.
    ///
    /// One read settles most calls: this supervisor's term has more than
    /// [`RENEW_WHEN_LEFT`] of the leader TTL left (it leads; nothing to
    /// write), or another supervisor's term is live and its process not
    /// dead (it follows). Only a renewal or a takeover takes the write lock
    /// and re-decides under it.
    pub fn ensure_leadership(&self) -> Result<bool> {
        let ttl = self.cfg.leader_ttl_s;
        let settled = with_tx(self.store.as_ref(), Mode::Read, |tx| {
            let t = self.cfg.clock.now_in(tx)?.secs();
            Ok(match tx.leadership()? {
                Some(l) if l.holder == self.id => (l.expires_at - t > ttl * RENEW_WHEN_LEFT).then_some(true),
                Some(l) => (l.expires_at >= t && !self.holder_dead(tx, &l.holder)?).then_some(false),
                None => None,
            })
        })?;
        let leader = match settled {
            Some(leader) => leader,
            None => self.write(|tx| {
                let cur = tx.leadership()?;
                let t = self.cfg.clock.now_in(tx)?;
                let mine = match &cur {
                    None => true,
                    Some(l) if l.holder == self.id => true,
                    // Expired, or the leader process died (its liveness
                    // token dropped): take over without waiting.
                    Some(l) => l.expires_at < t.secs() || self.holder_dead(tx, &l.holder)?,
                };
                if mine {
                    tx.put_leadership(&Leadership { holder: self.id.to_string(), expires_at: (t + ttl).secs() }, t)?;
                }
                Ok(mine)
            })?,
        };
        if settled.is_none() && leader {
            self.metrics.leader_renewals.fetch_add(1, Ordering::Relaxed);
        }
        let was = self.is_leader.swap(leader, Ordering::Relaxed);
        if leader && !was {
            self.metrics.leadership_changes.fetch_add(1, Ordering::Relaxed);
            tracing::info!(supervisor = %self.id, "became leader");
        }
        Ok(leader)
    }

    /// Cheap read for followers: the leader's lease expired or its process
    /// died on this host, so a takeover attempt is worth a write.
    pub fn leader_gone(&self) -> Result<bool> {
        with_tx(self.store.as_ref(), Mode::Read, |tx| {
            Ok(match tx.leadership()? {
                None => true,
                Some(l) if l.holder == self.id => false,
                Some(l) => l.expires_at < self.cfg.clock.now_in(tx)?.secs() || self.holder_dead(tx, &l.holder)?,
            })
        })
    }

    /// Give up leadership (clean shutdown), so a standby takes over at once.
    pub fn resign(&self) -> Result<()> {
        if !self.is_leader() {
            return Ok(());
        }
        self.write(|tx| {
            if let Some(l) = tx.leadership()?.filter(|l| l.holder == self.id) {
                let t = self.cfg.clock.now_in(tx)?;
                tx.put_leadership(&Leadership { holder: l.holder, expires_at: 0.0 }, t)?;
            }
            Ok(())
        })?;
        self.is_leader.store(false, Ordering::Relaxed);
        Ok(())
    }
}
