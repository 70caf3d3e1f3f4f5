//! The store audit: the store's own commit order, captured by the harness.
//!
//! Before any worker or supervisor starts (right after `dhp dispatch`
//! created the store, or `dhp ingest` a standby's), the harness installs
//! triggers on the spec's tables — `ownership`, `handoffs`, `checkpoints`
//! and `leadership` (docs/PROTOCOL.md §3) — that append every INSERT,
//! UPDATE and DELETE, with the row as it was (`old`) and as it became
//! (`new`) as JSON, to the harness-owned table [`TABLE`] in the same
//! database. The triggers run inside the implementation's own
//! transactions, so an audit row exists exactly when the change committed,
//! and its `seq` is the commit order:
//!
//! - **SQLite** has one writer at a time: `seq INTEGER PRIMARY KEY
//!   AUTOINCREMENT` is assigned in commit order. `at` is
//!   `julianday('now')` of the writing process (its clock, faked or not).
//! - **PostgreSQL**: the triggers are `DEFERRABLE INITIALLY DEFERRED`
//!   constraint triggers, so they fire at commit, after every statement of
//!   the transaction; each takes a transaction-level advisory lock of the
//!   round's schema before it draws its `seq`, held until the commit is
//!   done, so `seq` order is commit order across concurrent transactions
//!   (the lock never waits while holding anything the others need: at that
//!   point the transaction has no statement left). `at` is the server's
//!   `clock_timestamp()` at commit, `xid` the transaction id and `began`
//!   its `transaction_timestamp()`: the writer's checks ran between the
//!   two, and a loaded server can put a lease's length between them.
//!
//! A row replaced by SQLite's `INSERT OR REPLACE` / `REPLACE INTO` is
//! recorded as op `REPLACE` (the row as it was, `new` NULL) just before the
//! INSERT that replaced it: SQLite deletes it without firing DELETE
//! triggers, so a stream of such INSERTs would otherwise look like takes of
//! an absent row (`sqlite::ddl`). PostgreSQL has no REPLACE: its
//! `INSERT … ON CONFLICT DO UPDATE` fires the UPDATE trigger and is
//! recorded as an UPDATE with both rows.
//!
//! `handoffs` rows are recorded as a projection of the envelope (`status`,
//! `execution`, `contract.budget`, `updated_at`), not its whole text; the
//! other tables' rows in full. Nothing else in the store is changed: no
//! column, index or row of the spec's tables; dhp-core and the reference
//! create their tables with `CREATE TABLE IF NOT EXISTS` and never list the
//! store's tables, so an extra table and triggers are invisible to them
//! (`tests/it/audit_store.rs`).

mod postgres;
mod sqlite;

pub use postgres::{export as export_pg, install as install_pg};
pub use sqlite::{install as install_sqlite, read as read_sqlite};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The harness-owned audit table.
pub const TABLE: &str = "dhpchaos_audit";

/// The audited tables (the spec's, docs/PROTOCOL.md §3).
pub const TABLES: [&str; 4] = ["ownership", "handoffs", "checkpoints", "leadership"];

/// One committed change of an audited table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Event {
    /// Commit order (1, 2, …; gaps only from rolled-back transactions on PostgreSQL).
    pub seq: i64,
    /// `ownership`, `handoffs`, `checkpoints` or `leadership`.
    pub table: String,
    /// `INSERT`, `UPDATE`, `DELETE`, or `REPLACE` (a row SQLite's
    /// `INSERT OR REPLACE` removed; the INSERT follows).
    pub op: String,
    /// The row's `hid` (`None` for `leadership`).
    pub hid: Option<String>,
    /// The row before the change (`None` for an INSERT).
    pub old: Option<Value>,
    /// The row after the change (`None` for a DELETE or REPLACE).
    pub new: Option<Value>,
    /// When the change was made, epoch seconds (see the module docs for whose clock).
    pub at: f64,
    /// PostgreSQL: the id of the transaction that made it (changes of one
    /// transaction are one operation); `None` on SQLite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xid: Option<i64>,
    /// PostgreSQL: when that transaction began (`transaction_timestamp()`,
    /// the server's clock), the earliest its ownership check can have run;
    /// `None` on SQLite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub began: Option<f64>,
}

impl Event {
    /// Field `k` of the new row, or of the old one for a DELETE.
    pub fn row(&self) -> Option<&Value> {
        self.new.as_ref().or(self.old.as_ref())
    }
    /// `k` of the old row.
    pub fn old_s(&self, k: &str) -> Option<&str> {
        self.old.as_ref()?.get(k)?.as_str()
    }
    /// `k` of the new row.
    pub fn new_s(&self, k: &str) -> Option<&str> {
        self.new.as_ref()?.get(k)?.as_str()
    }
    /// Integer `k` of the old row.
    pub fn old_i(&self, k: &str) -> Option<i64> {
        self.old.as_ref()?.get(k)?.as_i64()
    }
    /// Integer `k` of the new row.
    pub fn new_i(&self, k: &str) -> Option<i64> {
        self.new.as_ref()?.get(k)?.as_i64()
    }
    /// Number `k` of the old row.
    pub fn old_f(&self, k: &str) -> Option<f64> {
        self.old.as_ref()?.get(k)?.as_f64()
    }
    /// Number `k` of the new row.
    pub fn new_f(&self, k: &str) -> Option<f64> {
        self.new.as_ref()?.get(k)?.as_f64()
    }
}

/// Parse one audit row's JSON text (`None` for SQL NULL).
fn parse(text: Option<String>) -> Option<Value> {
    text.map(|t| serde_json::from_str(&t).unwrap_or(Value::String(t)))
}
