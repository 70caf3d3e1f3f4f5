//! Where a stopped worker's in-flight write lies in the store's own commit
//! order relative to the orphan that superseded its fence.
//!
//! A worker SIGSTOPped right after sending a write reads its `Ok` only on
//! waking. On SQLite the write commits inside the worker's process, so a
//! stopped worker commits nothing; on PostgreSQL the server commits what the
//! client already sent. The reply's wall-clock time then says nothing about
//! when the row was committed: the store's order does.

use super::ctx::Ctx;
use super::history::Op;

impl Ctx<'_> {
    /// `op` (a checkpoint of fence `fence`) committed a row that precedes,
    /// in the store's commit order, the orphan that took fence `fence` away.
    ///
    /// Provable from the store audit (the row's INSERT before the fence
    /// bump, in commit order), else from the orphan's own record: its transaction counted
    /// the checkpoints committed before it (`checkpoints`, the next seq), and
    /// it names the fence it superseded (`previous_fence`). The op's row is
    /// the one at the seq its `ok` reported, and must hold the chunk the op
    /// computed. Anything less than that proof (no seq, no such row, the
    /// orphan's record missing) is `false`: the write is judged by time.
    pub(crate) fn committed_before_supersede(&self, op: &Op, fence: i64) -> bool {
        if op.op != "checkpoint" || op.ok != Some(true) {
            return false;
        }
        let Some(seq) = op.seq else { return false };
        let row_is_ops = self.store.get(&op.hid).is_some_and(|h| {
            h.ckpts.iter().any(|c| c.seq == seq && op.next_n.is_none_or(|n| c.state["next_n"].as_u64() == Some(n)))
        });
        if !row_is_ops {
            return false;
        }
        // The store audit (the harness's own record) orders the row's
        // INSERT and the fence bump: it decides when it has both — also
        // when the orphaning supervisor was killed before its own record
        // (an at-commit kill).
        if let Some(a) = self.audit {
            let bump = a.superseded(&op.hid, &op.process, fence).map(|(_, s)| s);
            let ins = a.checkpoint_inserts(&op.hid).find(|e| e.new_i("seq") == Some(seq)).map(|e| e.seq);
            if let (Some(bump), Some(ins)) = (bump, ins) {
                return ins < bump;
            }
        }
        let before = self
            .ix
            .orphans
            .iter()
            .filter(|o| o.hid == op.hid && o.previous_fence == Some(fence))
            .filter_map(|o| o.checkpoints)
            .min();
        before.is_some_and(|c| seq < c)
    }

    /// Some supervisor recorded the orphan that took fence `fence` of `hid`
    /// away, with the checkpoint count its transaction saw. Without it (the
    /// supervisor was killed between its commit and its record), an
    /// in-flight write's place relative to the orphan is unknown.
    pub(crate) fn orphan_counted(&self, hid: &str, fence: i64) -> bool {
        self.ix.orphans.iter().any(|o| o.hid == hid && o.previous_fence == Some(fence) && o.checkpoints.is_some())
    }
}
