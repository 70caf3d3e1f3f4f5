//! Shared by the torn_*.rs tests of dhp-core and dhp: a store with one handoff, and raw SQL to
//! put it into the state another implementation's crash or race leaves
//! (the only way such a state arises: our own writes are one transaction).
use dhp_core::envelope::{self, now, BuildOptions, ORPHANED_HOLDER};
use dhp_core::supervisor::Supervisor;
use dhp_core::{Config, Runner};
use rusqlite::{params, Connection};
use serde_json::{json, Value};
use std::path::Path;

/// Short leases: a lease TTL (and so the tombstone settle time) of 0.2 s.
pub fn cfg() -> Config {
    Config { lease_interval_s: 0.1, lease_max_missed: 2, ..Config::default() }
}

pub struct Fx {
    pub dir: tempfile::TempDir,
    pub hid: String,
    pub r: Runner,
}

impl Default for Fx {
    fn default() -> Self {
        Self::new()
    }
}

impl Fx {
    /// A store with one pending handoff.
    pub fn new() -> Fx {
        let dir = tempfile::tempdir().unwrap();
        let r = Runner::open(dir.path(), "w1", cfg()).unwrap();
        let schema = json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]});
        let env = envelope::build("torn.test", json!({"inline": {"n": 1}}), schema, BuildOptions::default()).unwrap();
        let hid = r.dispatch(&env).unwrap();
        Fx { dir, hid, r }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn root_str(&self) -> &str {
        self.dir.path().to_str().unwrap()
    }

    fn conn(&self) -> Connection {
        Connection::open(self.root().join("dhp.sqlite3")).unwrap()
    }

    /// Overwrite `execution.<key>` in the stored envelope.
    pub fn set_exec(&self, key: &str, v: Value) {
        let path = format!("$.execution.{key}");
        self.conn()
            .execute(
                "UPDATE handoffs SET envelope_json = json_set(envelope_json, ?1, json(?2)) WHERE hid=?3",
                params![path, v.to_string(), self.hid],
            )
            .unwrap();
    }

    pub fn set_status(&self, s: &str) {
        self.set_exec("status", json!(s));
    }

    /// Replace the ownership row; `age_s` is how long ago it was written.
    pub fn set_row(&self, holder: &str, fence: i64, lease_expires_at: f64, age_s: f64) {
        let c = self.conn();
        c.execute("DELETE FROM ownership WHERE hid=?1", [&self.hid]).unwrap();
        c.execute(
            "INSERT INTO ownership (hid, holder, fence, lease_expires_at, heartbeat_interval_s, max_missed, updated_at) \
             VALUES (?1, ?2, ?3, ?4, 0.1, 2, ?5)",
            params![self.hid, holder, fence, lease_expires_at, now() - age_s],
        )
        .unwrap();
    }

    pub fn live_row(&self, holder: &str, fence: i64) {
        self.set_row(holder, fence, now() + 60.0, 0.0);
    }

    pub fn expired_row(&self, holder: &str, fence: i64) {
        self.set_row(holder, fence, now() - 1.0, 1.0);
    }

    /// A tombstone written `age_s` ago.
    pub fn tombstone(&self, fence: i64, age_s: f64) {
        self.set_row(ORPHANED_HOLDER, fence, 0.0, age_s);
    }

    pub fn drop_row(&self) {
        self.conn().execute("DELETE FROM ownership WHERE hid=?1", [&self.hid]).unwrap();
    }

    pub fn status(&self) -> String {
        self.r.status(&self.hid).unwrap()["status"].as_str().unwrap().to_string()
    }

    /// (holder, fence) of the ownership row.
    pub fn row(&self) -> Option<(String, i64)> {
        self.r.ownership(&self.hid).unwrap().map(|o| (o.holder, o.fence.get()))
    }

    pub fn supervisor(&self) -> Supervisor {
        Supervisor::open(self.root(), "sup-torn", cfg()).unwrap()
    }

    /// One scan; the actions about this handoff.
    pub fn scan(&self) -> Vec<Value> {
        let acts = self.supervisor().scan().unwrap();
        acts.into_iter().filter(|a| a.hid() == self.hid).map(|a| a.to_json()).collect()
    }

    /// The protocol continues: a fresh worker recovers at a fence above
    /// `above` and completes.
    pub fn recover_and_complete(&self, above: i64) {
        let w = self.r.with_id("w-after").unwrap();
        let mut ctx = w.recover(&self.hid).unwrap();
        assert!(ctx.fence().get() > above, "fence {} must be above {above}", ctx.fence());
        ctx.checkpoint(&json!({"after": true})).unwrap();
        ctx.complete(&json!({"x": 1})).unwrap();
        assert_eq!(self.status(), "completed");
        assert_eq!(self.row(), None);
    }
}

/// The handoff and ownership tables as text (leadership changes with
/// every scan and is left out).
pub fn dump(root: &Path) -> String {
    let c = Connection::open(root.join("dhp.sqlite3")).unwrap();
    let mut out = String::new();
    for q in [
        "SELECT hid || '|' || envelope_json FROM handoffs ORDER BY hid",
        "SELECT hid || '|' || holder || '|' || fence || '|' || lease_expires_at FROM ownership ORDER BY hid",
    ] {
        let mut st = c.prepare(q).unwrap();
        for r in st.query_map([], |r| r.get::<_, String>(0)).unwrap() {
            out.push_str(&r.unwrap());
            out.push('\n');
        }
    }
    out
}
