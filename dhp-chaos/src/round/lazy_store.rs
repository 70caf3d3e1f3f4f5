//! Lost un-fsynced writes (`--lose-unsynced`, fault `lose-unsynced`): the
//! round's SQLite store lives on the harness's lazy file system
//! (`crate::lazyfs`), and the fault is a crash of the store's host: every
//! worker and supervisor (every process that has the store open) is
//! SIGKILLed, and once all are dead every store file goes back to what its
//! last fsync left. The round goes on; fresh supervisors and recoverers
//! find the store as a rebooted machine would.
//!
//! Right after the crash the harness reads the store itself and compares
//! it with the acknowledgements it saw before the crash: a worker asks its
//! workload service for chunk `[n, …)` only after its checkpoint with
//! `next_n = n` returned (or after it resumed from one in the store), so a
//! chunk served at `n` means the store acknowledged a checkpoint at `n`. A
//! handoff whose store then holds less (and is not terminal) lost an
//! acknowledged write: the `lose-unsynced` observation lists it, and
//! `durable-acks` judges it.

use super::*;
use crate::lazyfs::LazyMount;
use std::collections::BTreeMap;

/// How long the crash waits for its victims to be reaped.
const REAP_WAIT_S: f64 = 5.0;
/// The fault kind of each process the crash kills (the crash itself is
/// recorded once, as `lose-unsynced` on the store).
pub(super) const HOST_CRASH: &str = "host-crash";

/// The mounted lazy file system and when it last crashed.
#[derive(Debug)]
pub(super) struct LazyStore {
    mount: LazyMount,
    last_crash: f64,
}

impl Driver<'_> {
    /// Put the store on the lazy file system (after dispatch and the audit,
    /// before any process under test); the monitor reopens through it.
    pub(super) fn mount_lazy_store(&mut self) -> Result<()> {
        if !self.cfg.lose_unsynced {
            return Ok(());
        }
        self.db = None;
        self.probe = None;
        let m = LazyMount::mount(&self.paths.store)
            .with_context(|| format!("mounting the lazy store file system on {}", self.paths.store.display()))?;
        self.lazy = Some(LazyStore { mount: m, last_crash: 0.0 });
        self.hist.record("observe", json!({"what": "lazy-store-mount", "fs": "fuse"}));
        self.open_monitor()
    }

    /// Unmount at the end (every process gone), the store's files kept.
    pub(super) fn unmount_lazy_store(&mut self) -> Result<()> {
        let Some(mut l) = self.lazy.take() else { return Ok(()) };
        self.db = None;
        self.probe = None;
        let fsyncs = l.mount.fsyncs();
        l.mount.unmount().context("unmounting the lazy store file system")?;
        self.hist.record("observe", json!({"what": "lazy-store-unmount", "fsyncs": fsyncs}));
        Ok(())
    }

    /// The fault: the store's host crashes. False without the lazy store.
    pub(super) fn inject_lose_unsynced(&mut self) -> bool {
        if self.lazy.is_none() {
            return false;
        }
        let acked = self.acked_before_crash();
        self.fault_id += 1;
        self.live.faults += 1;
        let id = self.fault_id;
        let t = self.hist.record(
            "fault",
            json!({"fault_id": id, "kind": FaultKind::LoseUnsynced.name(), "signal": "CRASH", "victim": "store",
                   "role": "disk"}),
        );
        let users: Vec<usize> = (0..self.table.procs.len())
            .filter(|&i| {
                let p = &self.table.procs[i];
                matches!(p.role, Role::Worker | Role::Supervisor) && p.alive()
            })
            .collect();
        for &i in &users {
            self.table.procs[i].paused = None;
            self.signal(i, Signal::SIGKILL, HOST_CRASH, id);
        }
        let deadline = hist::now() + REAP_WAIT_S;
        while users.iter().any(|&i| self.table.procs[i].alive()) && hist::now() < deadline {
            let _ = self.reap(true);
            std::thread::sleep(Duration::from_millis(5));
        }
        let still: Vec<String> =
            users.iter().filter(|&&i| self.table.procs[i].alive()).map(|&i| self.table.procs[i].name.clone()).collect();
        self.db = None;
        self.probe = None;
        let lost = match (&mut self.lazy, still.is_empty()) {
            (Some(l), true) => {
                l.last_crash = t;
                l.mount.crash().map_err(|e| e.to_string())
            }
            _ => Err(format!("not crashed: {} still alive after {REAP_WAIT_S} s", still.join(", "))),
        };
        let (files, mut error) = match lost {
            Ok(f) => (f, None),
            Err(e) => (Vec::new(), Some(e)),
        };
        let after = match self.store_progress() {
            Ok(a) => a,
            Err(e) => {
                error.get_or_insert(format!("the store could not be read after the crash: {e}"));
                BTreeMap::new()
            }
        };
        let lost_acks = if error.is_some() { Vec::new() } else { lost_acks(&acked, &after) };
        let fsyncs = self.lazy.as_ref().map_or(0, |l| l.mount.fsyncs());
        self.hist.record(
            "observe",
            json!({"what": "lose-unsynced", "fault_id": id, "victims": users.len(), "error": error,
                   "files": files.iter().map(|(n, l)| json!({"file": n, "lost": l})).collect::<Vec<_>>(),
                   "fsyncs": fsyncs, "acked": acked, "store_after": after, "lost_acks": lost_acks}),
        );
        let _ = self.open_monitor();
        self.monitor();
        true
    }

    /// Per handoff, the highest `next_n` the harness saw acknowledged since
    /// the last crash: the start of the last chunk its workload service
    /// served (above `lo`).
    fn acked_before_crash(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        let since = self.lazy.as_ref().map_or(0.0, |l| l.last_crash);
        let Ok(Some(w)) = crate::workload::load(&self.paths.dir) else { return out };
        for s in w.served.iter().filter(|s| s.t > since) {
            let lo = self.tasks_lo(&s.hid);
            if lo.is_some_and(|lo| s.n > lo) {
                let e = out.entry(s.hid.clone()).or_insert(0);
                *e = (*e).max(s.n);
            }
        }
        out
    }

    fn tasks_lo(&self, hid: &str) -> Option<u64> {
        self.hids.iter().position(|h| h == hid).map(|i| self.cfg.lo_hi(i as u32).0)
    }

    /// Per handoff in the store now: (status, highest checkpoint `next_n`),
    /// read through a fresh read-write connection (it recovers the WAL).
    fn store_progress(&self) -> std::result::Result<BTreeMap<String, (String, u64)>, String> {
        let c = Connection::open(self.paths.store.join("dhp.sqlite3")).map_err(|e| e.to_string())?;
        c.busy_timeout(Duration::from_secs(5)).map_err(|e| e.to_string())?;
        read_progress(&c).map_err(|e| e.to_string())
    }
}

fn read_progress(c: &Connection) -> rusqlite::Result<BTreeMap<String, (String, u64)>> {
    let mut out = BTreeMap::new();
    let mut st = c.prepare("SELECT hid, envelope_json FROM handoffs")?;
    for r in st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))? {
        let (hid, env) = r?;
        let v: Value = serde_json::from_str(&env).unwrap_or(Value::Null);
        let status = v.pointer("/execution/status").and_then(Value::as_str).unwrap_or("").to_string();
        out.insert(hid, (status, 0));
    }
    let mut st = c.prepare("SELECT hid, state_json FROM checkpoints")?;
    for r in st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))? {
        let (hid, state) = r?;
        let v: Value = serde_json::from_str(&state).unwrap_or(Value::Null);
        if let Some(e) = out.get_mut(&hid) {
            e.1 = e.1.max(v["next_n"].as_u64().unwrap_or(0));
        }
    }
    Ok(out)
}

/// The handoffs whose acknowledged `next_n` the store no longer holds.
fn lost_acks(acked: &BTreeMap<String, u64>, after: &BTreeMap<String, (String, u64)>) -> Vec<Value> {
    let mut out = Vec::new();
    for (hid, &n) in acked {
        let (status, have) = after.get(hid).cloned().unwrap_or_default();
        if !terminal(&status) && have < n {
            out.push(json!({"hid": hid, "acked_next_n": n, "store_next_n": have, "status": status}));
        }
    }
    out
}
