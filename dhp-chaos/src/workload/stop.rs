//! Stops at a served chunk: a fault placed at a protocol moment the harness
//! controls. A worker armed by the seeded schedule is SIGSTOPped by the
//! workload service when it answers the worker's next chunk — after the
//! chunk is recorded, before the answer is written — so the worker is
//! frozen holding that chunk before it could check its ownership again.
//! The round's driver records the stop as its own fault (`stop-at-chunk`,
//! with the fence the worker presented) and SIGCONTs the worker once its
//! handoff was taken over (docs/chaos-model.md).

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The fault kind recorded in the history.
pub const STOP_AT_CHUNK: &str = "stop-at-chunk";

/// One worker stopped at a served chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkStop {
    /// When the service stopped it (epoch seconds, the harness's clock).
    pub t: f64,
    /// The worker (its runner id, the process name).
    pub holder: String,
    /// Its pid.
    pub pid: i32,
    /// The handoff of the chunk.
    pub hid: String,
    /// The fence the worker presented with the request.
    pub fence: i64,
    /// The chunk `[n, end)`.
    pub n: u64,
    /// Its end.
    pub end: u64,
}

#[derive(Debug, Default)]
struct Inner {
    /// holder → pid, armed for its next served chunk.
    armed: HashMap<String, i32>,
    /// Stops done, not yet taken by the driver.
    done: Vec<ChunkStop>,
}

/// Shared between the service's threads and the round's driver.
#[derive(Debug, Clone, Default)]
pub struct ChunkStops(Arc<Mutex<Inner>>);

impl ChunkStops {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stop `holder` (process `pid`) when its next chunk is answered.
    pub fn arm(&self, holder: &str, pid: i32) {
        self.lock().armed.insert(holder.to_string(), pid);
    }

    /// Forget `holder` (it exited, or the fault phase ended).
    pub fn disarm(&self, holder: &str) {
        self.lock().armed.remove(holder);
    }

    /// Is `holder` armed?
    pub fn armed(&self, holder: &str) -> bool {
        self.lock().armed.contains_key(holder)
    }

    /// The stops done since the last call.
    pub fn take(&self) -> Vec<ChunkStop> {
        std::mem::take(&mut self.lock().done)
    }

    /// The service is about to answer `holder`'s chunk: stop it if armed.
    /// The stop is recorded only if the signal was delivered.
    pub(super) fn at_answer(&self, holder: &str, hid: &str, fence: i64, n: u64, end: u64) {
        let mut g = self.lock();
        let Some(pid) = g.armed.remove(holder) else { return };
        if kill(Pid::from_raw(pid), Signal::SIGSTOP).is_ok() {
            let t = crate::hist::now();
            g.done.push(ChunkStop { t, holder: holder.into(), pid, hid: hid.into(), fence, n, end });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The process state letter of `pid` (`T`: stopped).
    fn state(pid: i32) -> char {
        let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        s.rsplit_once(')').and_then(|(_, r)| r.trim_start().chars().next()).unwrap()
    }

    #[test]
    fn only_an_armed_worker_is_stopped_at_its_next_answer_and_once() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id() as i32;
        let stops = ChunkStops::default();
        stops.at_answer("w1", "h", 0, 10, 20);
        assert!(stops.take().is_empty(), "not armed: no stop");
        stops.arm("w1", pid);
        stops.at_answer("w2", "h", 0, 10, 20);
        assert!(stops.armed("w1") && stops.take().is_empty(), "another worker's answer stops nobody");
        stops.at_answer("w1", "h", 3, 20, 30);
        let done = stops.take();
        assert_eq!(done.len(), 1);
        assert_eq!((done[0].holder.as_str(), done[0].fence, done[0].n, done[0].end), ("w1", 3, 20, 30));
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(state(pid), 'T', "the armed worker is stopped");
        assert!(!stops.armed("w1"), "disarmed by its stop");
        stops.at_answer("w1", "h", 3, 30, 40);
        assert!(stops.take().is_empty(), "stopped once");
        let _ = child.kill();
        let _ = child.wait();
    }
}
