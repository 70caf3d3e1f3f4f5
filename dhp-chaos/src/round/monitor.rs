//! Watching the store: statuses, holders, the leader and commit stalls.

use super::*;

impl Driver<'_> {
    /// Read statuses, ownership, leadership; record what changed.
    /// (Re)open the monitor's PostgreSQL connection, at most every 200 ms
    /// (the server may be down: crashed by a fault, restarting).
    pub(super) fn pg_reconnect(&mut self) {
        let (Some(url), true) = (&self.cfg.pg_url, self.pg.is_none()) else { return };
        let now = hist::now();
        if now - self.last_pg_connect < 0.2 {
            return;
        }
        self.last_pg_connect = now;
        self.pg = crate::pg::connect(url, &self.cfg.pg_schema(), Duration::from_millis(500)).ok();
    }

    /// The PostgreSQL store as the monitor sees it; the connection is
    /// dropped on error and reopened on a later tick.
    fn read_pg(&mut self) -> Option<Snapshot> {
        self.pg_reconnect();
        let c = self.pg.as_mut()?;
        let mut read = || -> Result<Snapshot, postgres::Error> {
            let mut s = Snapshot::default();
            let mut tx = c.build_transaction().read_only(true).start()?;
            for r in tx.query("SELECT hid, status FROM handoffs", &[])? {
                s.status.insert(r.get(0), r.get::<_, Option<String>>(1).unwrap_or_default());
            }
            for r in tx.query("SELECT hid, holder, fence FROM ownership", &[])? {
                s.own.insert(r.get(0), (r.get(1), r.get(2)));
            }
            let now = hist::now();
            for r in tx.query("SELECT holder, expires_at FROM leadership WHERE id = 1", &[])? {
                if r.get::<_, f64>(1) >= now {
                    s.leader = Some(r.get(0));
                }
            }
            for r in tx.query("SELECT hid, MAX(seq) + 1 FROM checkpoints GROUP BY hid", &[])? {
                s.ckpts.insert(r.get(0), r.get(1));
            }
            tx.commit()?;
            Ok(s)
        };
        match read() {
            Ok(s) => Some(s),
            Err(_) => {
                self.pg = None;
                None
            }
        }
    }

    /// The holder of an unexpired SQLite leadership row. Each supervisor
    /// writes the expiry on its own clock; a faked one is put back on the
    /// real clock first (else a leader on a slow clock looks expired).
    fn current_leader(&self, row: Option<&(String, f64)>) -> Option<String> {
        let (holder, exp) = row?;
        let exp = match self.sup_skews.get(holder) {
            Some((started, skew)) => skew.real_time(*started, *exp),
            None => *exp,
        };
        (exp >= hist::now()).then(|| holder.clone())
    }

    /// Read statuses, ownership, leadership; record what changed.
    pub(super) fn monitor(&mut self) {
        let (new, dv) = if self.cfg.pg_url.is_some() {
            // no commit-stall probe on PostgreSQL: row locks do not stop other writers
            let Some(new) = self.read_pg() else { return };
            (new, None)
        } else {
            let Some(db) = &self.db else { return };
            let dv: Option<i64> = db.query_row("PRAGMA data_version", [], |r| r.get(0)).ok();
            let Ok(mut new) = read_sqlite(db) else { return };
            new.leader = self.current_leader(new.leadership.as_ref());
            (new, dv)
        };
        let now = hist::now();
        if let Some(dv) = dv {
            match self.data_version {
                Some((old, _)) if old == dv => {}
                _ => {
                    self.data_version = Some((dv, now));
                    if let Some(since) = self.stall_since.take() {
                        self.hist.record(
                            "observe",
                            json!({"what": "store-stall", "since": since, "until": now, "seconds": now - since}),
                        );
                    }
                }
            }
        }
        // No commit by anyone for 250 ms while a worker is SIGSTOPped (workers
        // heartbeat every lease_interval/2 and commit each checkpoint; leaders
        // renew lazily, when less than half their term is left, RENEW_WHEN_LEFT
        // in dhp-core's supervisor; so a live store commits often): probe
        // whether someone holds the write lock — BEGIN IMMEDIATE with no busy
        // wait, rolled back at once, at most every 50 ms.
        if self.stall_since.is_none() {
            if let Some((_, changed)) = self.data_version {
                let quiet = 0.25_f64.max(self.cfg.timing.supervisor_scan_s * 2.5);
                if now - changed > quiet
                    && now - self.last_probe > 0.05
                    && self.table.procs.iter().any(|p| p.paused.is_some() && p.alive())
                {
                    self.last_probe = now;
                    if let Some(probe) = &self.probe {
                        match probe.execute_batch("BEGIN IMMEDIATE") {
                            Ok(()) => {
                                let _ = probe.execute_batch("ROLLBACK");
                            }
                            Err(_) => self.stall_since = Some(changed),
                        }
                    }
                }
            }
        }
        for hid in &self.hids {
            let st = new.status.get(hid).cloned().unwrap_or_default();
            let own = new.own.get(hid).cloned();
            if self.snap.status.get(hid) != Some(&st) || self.snap.own.get(hid) != own.as_ref() {
                self.hist.record(
                    "observe",
                    json!({"what": "handoff", "hid": hid, "status": st,
                           "holder": own.as_ref().map(|o| o.0.clone()), "fence": own.as_ref().map(|o| o.1)}),
                );
            }
        }
        if new.leader != self.snap.leader {
            self.hist.record("observe", json!({"what": "leader", "holder": new.leader}));
        }
        self.live.terminal = self.hids.iter().filter(|h| new.status.get(*h).is_some_and(|s| terminal(s))).count();
        self.snap = new;
    }
}

/// The SQLite store as the monitor sees it.
fn read_sqlite(db: &Connection) -> rusqlite::Result<Snapshot> {
    let mut s = Snapshot::default();
    let mut st = db.prepare_cached("SELECT hid, json_extract(envelope_json, '$.execution.status') FROM handoffs")?;
    for r in st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?)))? {
        let (h, s2) = r?;
        s.status.insert(h, s2.unwrap_or_default());
    }
    let mut st = db.prepare_cached("SELECT hid, holder, fence FROM ownership")?;
    for r in st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, i64>(2)?)))? {
        let (h, holder, fence) = r?;
        s.own.insert(h, (holder, fence));
    }
    // judged in `monitor`: the expiry is on the holder's clock
    let mut st = db.prepare_cached("SELECT holder, expires_at FROM leadership WHERE id = 1")?;
    for r in st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?)))? {
        s.leadership = Some(r?);
    }
    let mut st = db.prepare_cached("SELECT hid, MAX(seq) + 1 FROM checkpoints GROUP BY hid")?;
    for r in st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
        let (h, n) = r?;
        s.ckpts.insert(h, n);
    }
    Ok(s)
}
