//! What the harness knows about its processes, and the check-then-write
//! rule built on it.
//!
//! # When the check-then-write variant excuses a stale write
//!
//! The reference (PROTOCOL §13.2) checks its ownership in one statement and
//! writes in the next. A worker fenced out between the two (an orphan or a
//! recover bumped the fence at time `b`, audit seq `s_b`) still writes. So
//! a write with a superseded fence `f` by holder `w` is possible under the
//! weakness **only if `w`'s check for that very write could have run
//! before `b`**. The harness's facts rule that out in three cases:
//!
//! 1. **A chunk served after the bump.** The worker checks its ownership
//!    after it got the chunk it is about to record, so a `ChunkServed { w,
//!    hid, f }` at a time after `b` (and before the write) puts the check
//!    after `b`: the check would have failed.
//! 2. **A second stale write.** After its first write that lands after
//!    the bump, `w`'s next write starts with a new check, which runs after
//!    that first write, hence after `b`.
//! 3. **Stopped before the bump, continued after it.** A `StoppedAtChunk
//!    { w, hid, f }` at `t_s < b` says `w` was paused right after being
//!    served, before its check; if its first `Continued` after `t_s` is
//!    after `b`, its check ran after `b`.
//!
//! Otherwise the write is excused (the harness cannot place the check),
//! and the excuse names the bump it raced.

use super::types::Fact;

/// Every fact fed so far, in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Facts {
    pub all: Vec<Fact>,
}

/// The fence bump a stale write raced.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bump {
    pub holder: String,
    pub fence: i64,
    pub seq: i64,
    pub at: f64,
}

impl Facts {
    /// `holder` died at or before `at` (with `slack` seconds between the
    /// harness's clock and the store's).
    pub fn died_by(&self, holder: &str, at: f64, slack: f64) -> bool {
        self.all.iter().any(|x| matches!(x, Fact::Died { holder: h, at: t } if h == holder && *t <= at + slack))
    }

    /// `holder`'s liveness token may have been missing at `at` (a cut link,
    /// `slack` either side).
    pub fn token_lost(&self, holder: &str, at: f64, slack: f64) -> bool {
        self.all.iter().any(|x| {
            matches!(x, Fact::TokenLost { holder: h, at: from, until } if h == holder && *from <= at + slack && at <= *until + slack)
        })
    }

    /// `holder` died (the harness's record) strictly before `at`: it cannot
    /// have committed anything at `at`.
    pub fn died_before(&self, holder: &str, at: f64) -> bool {
        self.all.iter().any(|x| matches!(x, Fact::Died { holder: h, at: t } if h == holder && *t < at))
    }

    /// The (holder, fence) the harness served chunks of `hid` to in `(from, to]`.
    pub fn served(&self, hid: &str, from: f64, to: f64) -> Vec<(String, i64)> {
        let mut out: Vec<(String, i64)> = Vec::new();
        for x in &self.all {
            if let Fact::ChunkServed { holder, hid: h, fence, at } = x {
                if h == hid && *at > from && *at <= to && !out.iter().any(|(a, b)| a == holder && b == fence) {
                    out.push((holder.clone(), *fence));
                }
            }
        }
        out
    }

    /// The (holder, fence) of the served chunk checkpoint `seq` of `hid`
    /// carries, when the harness's record names it.
    pub fn carried_by(&self, hid: &str, seq: i64) -> Option<(String, i64)> {
        self.all.iter().find_map(|x| match x {
            Fact::CarriedBy { holder, hid: h, seq: s, fence, .. } if h == hid && *s == seq => {
                Some((holder.clone(), *fence))
            }
            _ => None,
        })
    }

    /// The check-then-write rule of the module docs: `Ok(why)` if the
    /// stale write at `at` could have been checked before `bump`, else
    /// `Err(why not)`. `earlier_stale`: seqs of earlier stale writes by the
    /// same holder and fence after the bump.
    pub fn could_check_before(&self, hid: &str, bump: &Bump, at: f64, earlier_stale: &[i64]) -> Result<String, String> {
        let (w, f) = (&bump.holder, bump.fence);
        if let Some(first) = earlier_stale.first() {
            return Err(format!(
                "a second stale write by {w} (fence {f}) after the bump at audit seq {}: its first landed at seq {first}, so this one's check ran after the bump",
                bump.seq
            ));
        }
        let late_chunk = self.all.iter().find_map(|x| match x {
            Fact::ChunkServed { holder, hid: h, fence, at: t }
                if holder == w && h == hid && *fence == f && *t > bump.at && *t <= at =>
            {
                Some(*t)
            }
            _ => None,
        });
        if let Some(t) = late_chunk {
            return Err(format!(
                "the harness served {w} a chunk with fence {f} at {t:.3}, after the bump at {:.3} (audit seq {}): its check came after the chunk, after the bump",
                bump.at, bump.seq
            ));
        }
        for x in &self.all {
            let Fact::StoppedAtChunk { holder, hid: h, fence, at: ts } = x else { continue };
            if holder != w || h != hid || *fence != f || *ts >= bump.at {
                continue;
            }
            let cont = self.all.iter().find_map(|y| match y {
                Fact::Continued { holder, at: tc } if holder == w && *tc > *ts => Some(*tc),
                _ => None,
            });
            if let Some(tc) = cont.filter(|tc| *tc > bump.at) {
                return Err(format!(
                    "the harness stopped {w} at {ts:.3} right after serving it a chunk with fence {f}, before its check, and continued it only at {tc:.3}, after the bump at {:.3} (audit seq {})",
                    bump.at, bump.seq
                ));
            }
        }
        Ok(format!(
            "{w}'s ownership check with fence {f} could have passed before the fence bump at audit seq {} ({:.3}); the reference writes in a separate statement (PROTOCOL §13.2)",
            bump.seq, bump.at
        ))
    }
}
