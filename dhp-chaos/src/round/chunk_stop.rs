//! `stop-at-chunk` faults (`crate::workload::ChunkStops`): the seeded
//! schedule arms a lease-holding worker, the workload service stops it when
//! it answers that worker's next chunk, and the driver records the stop as
//! its own fault and wakes the worker like a pause (once replaced).

use super::*;
use crate::workload::STOP_AT_CHUNK;

impl Driver<'_> {
    /// Arm a lease-holding worker (drawn from the seeded victim stream) to be
    /// stopped at its next served chunk; false when none can be (no
    /// workload service, no lease holder not already armed).
    pub(super) fn arm_chunk_stop(&mut self) -> bool {
        let Some(stops) = self.workload.as_ref().map(|s| s.stops().clone()) else { return false };
        let holders: Vec<usize> = (0..self.table.procs.len())
            .filter(|&i| {
                let p = &self.table.procs[i];
                p.role == Role::Worker && p.active() && self.lease_of(p).is_some() && !stops.armed(&p.name)
            })
            .collect();
        let Some(&i) = holders.choose(&mut self.rng_victim) else { return false };
        let (name, pid) = (self.table.procs[i].name.clone(), self.table.procs[i].pid);
        stops.arm(&name, pid);
        self.hist.record("fault-armed", json!({"kind": STOP_AT_CHUNK, "victim": name, "victim_pid": pid}));
        true
    }

    /// Record the stops the service made as the harness's faults; the
    /// stopped workers are then paused ones ([`Driver::wake`]).
    pub(super) fn notice_chunk_stops(&mut self) {
        let Some(done) = self.workload.as_ref().map(|s| s.stops().take()) else { return };
        for s in done {
            let Some(i) = self.table.procs.iter().position(|p| p.name == s.holder && p.pid == s.pid) else { continue };
            let lease = self.lease_of(&self.table.procs[i]);
            self.fault_id += 1;
            self.live.faults += 1;
            self.live.pauses += 1;
            self.table.procs[i].paused = Some((s.t, lease.or(Some(s.fence))));
            self.hist.record_at(
                s.t,
                "fault",
                json!({"fault_id": self.fault_id, "kind": STOP_AT_CHUNK, "signal": "STOP", "victim": s.holder,
                       "victim_pid": s.pid, "role": "worker", "hid": s.hid, "lease_fence": lease,
                       "chunk_fence": s.fence, "n": s.n, "end": s.end, "leader": false}),
            );
        }
    }
}
