//! The judge's public vocabulary: what the harness feeds it (audited row
//! changes and process facts) and what it answers (a [`Report`]).
//!
//! dhp-chaos builds [`Change`]s from its audit table (one per audit row,
//! in `seq` order) and [`Fact`]s from what its own process control did,
//! merges both by time / commit order and feeds them to a
//! [`Judge`](super::Judge).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Error;

/// An audited table of the store (docs/PROTOCOL.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Table {
    /// `ownership`: one row per owned handoff (holder, fence, lease).
    Ownership,
    /// `handoffs`: the envelope, audited as a projection (status,
    /// execution, contract.budget, updated_at).
    Handoffs,
    /// `checkpoints`: one row per (hid, seq).
    Checkpoints,
    /// `leadership`: the single row `id = 1`.
    Leadership,
}

impl Table {
    /// The table's SQL name.
    pub fn as_str(self) -> &'static str {
        match self {
            Table::Ownership => "ownership",
            Table::Handoffs => "handoffs",
            Table::Checkpoints => "checkpoints",
            Table::Leadership => "leadership",
        }
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Table {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "ownership" => Ok(Table::Ownership),
            "handoffs" => Ok(Table::Handoffs),
            "checkpoints" => Ok(Table::Checkpoints),
            "leadership" => Ok(Table::Leadership),
            other => Err(Error::UnknownTable(other.to_string())),
        }
    }
}

/// What a change did to its row (serialized as the audit writes it: `INSERT`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
#[non_exhaustive]
pub enum RowOp {
    /// A new row.
    Insert,
    /// A row changed in place.
    Update,
    /// A row removed by DELETE.
    Delete,
    /// A row removed by `INSERT OR REPLACE` / `ON CONFLICT REPLACE`: SQLite
    /// fires no DELETE trigger for it, so the audit records it apart. The
    /// INSERT that replaced it follows as its own change.
    Replace,
}

impl FromStr for RowOp {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s.to_ascii_uppercase().as_str() {
            "INSERT" => Ok(RowOp::Insert),
            "UPDATE" => Ok(RowOp::Update),
            "DELETE" => Ok(RowOp::Delete),
            "REPLACE" => Ok(RowOp::Replace),
            _ => Err(Error::UnknownRowOp(s.to_string())),
        }
    }
}

/// One committed change of an audited table, as the audit recorded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// Commit order.
    pub seq: i64,
    /// The table changed.
    pub table: Table,
    /// What happened to the row.
    pub op: RowOp,
    /// The row's hid (`None` for `leadership`).
    pub hid: Option<String>,
    /// The row before (`None` for an INSERT).
    pub old: Option<Value>,
    /// The row after (`None` for a DELETE or REPLACE).
    pub new: Option<Value>,
    /// The store's clock when the change was made, epoch seconds.
    pub at: f64,
    /// PostgreSQL transaction id, when known: changes with the same txn are
    /// one operation. `None` on SQLite.
    pub txn: Option<i64>,
    /// When the change's transaction began (PostgreSQL's
    /// `transaction_timestamp()`), epoch seconds, when the audit knows it:
    /// the earliest moment the writer's ownership check can have run. On
    /// PostgreSQL `at` is taken at commit (deferred triggers), and a loaded
    /// machine can hold a transaction between its check and its commit for
    /// longer than a lease; a holder's write counts as under a live lease
    /// when the lease was live at this moment. `None`: `at` is used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub began_at: Option<f64>,
}

impl Change {
    /// The moment a holder's ownership check is judged at: the start of its
    /// transaction when known, else the change's own time.
    pub fn check_at(&self) -> f64 {
        self.began_at.map_or(self.at, |b| b.min(self.at))
    }
}

/// A process fact the harness owns, with the harness's wall time (epoch s).
/// Serialized as `{"fact": "died", "holder": …, "at": …}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "fact", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Fact {
    /// The harness SIGKILLed, or saw the exit of, the process running as `holder`.
    Died {
        /// Worker or supervisor id.
        holder: String,
        /// When.
        at: f64,
    },
    /// The harness cut, stalled or slowed the link of the process running
    /// as `holder` to the store from `at` until `until`: its sessions may
    /// end, its liveness token with them, so to the protocol (§7.5) it may
    /// be taken for dead then (a `worker-died` orphan is legal), while it
    /// lives and may write again afterwards (fenced if it was orphaned).
    TokenLost {
        /// Worker id.
        holder: String,
        /// When the fault began.
        at: f64,
        /// When its token may be missing until (the heal, plus the time a
        /// worker takes to retake it).
        until: f64,
    },
    /// The harness SIGSTOPped the process.
    Stopped {
        /// Worker or supervisor id.
        holder: String,
        /// When.
        at: f64,
    },
    /// The harness SIGCONTed the process.
    Continued {
        /// Worker or supervisor id.
        holder: String,
        /// When.
        at: f64,
    },
    /// The harness's workload service answered a chunk to `holder`, who
    /// presented `fence` for `hid`.
    ChunkServed {
        /// Worker id.
        holder: String,
        /// Handoff.
        hid: String,
        /// The fence the worker presented.
        fence: i64,
        /// When.
        at: f64,
    },
    /// The harness's record names the served chunk a committed checkpoint
    /// carries (the workload service's stamp in its state): checkpoint
    /// `seq` of `hid` holds the chunk served to `holder` under `fence` at
    /// `at` — whatever the time window between checkpoints says.
    CarriedBy {
        /// Worker id the chunk was served to.
        holder: String,
        /// Handoff.
        hid: String,
        /// The checkpoint's seq.
        seq: i64,
        /// The fence the worker presented for the chunk.
        fence: i64,
        /// When the chunk was served.
        at: f64,
    },
    /// The harness paused `holder` right after serving it that chunk,
    /// before it could check its ownership again.
    StoppedAtChunk {
        /// Worker id.
        holder: String,
        /// Handoff.
        hid: String,
        /// The fence the worker presented.
        fence: i64,
        /// When.
        at: f64,
    },
}

impl Fact {
    /// The harness time of the fact.
    pub fn at(&self) -> f64 {
        match self {
            Fact::Died { at, .. }
            | Fact::TokenLost { at, .. }
            | Fact::Stopped { at, .. }
            | Fact::Continued { at, .. }
            | Fact::ChunkServed { at, .. }
            | Fact::CarriedBy { at, .. }
            | Fact::StoppedAtChunk { at, .. } => *at,
        }
    }
}

/// Which model the judge holds the store to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Variant {
    /// The spec: every ownership check is atomic with its write (§5.2).
    Strict,
    /// The reference's known weakness (PROTOCOL §13.2): check, then write
    /// in a separate statement, so a worker fenced out in between still
    /// writes. Such a stale write is excused only when it is possible
    /// under the weakness (see [`crate::judge`]'s module docs).
    CheckThenWrite,
}

/// The store's configuration the judge needs (what rows do not say).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// `contract.budget.max_attempts` when a handoff row does not carry one (3).
    pub default_max_attempts: u32,
    /// `DHP_LEADER_TTL_S` (5.0): the longest a leadership term can be.
    pub leader_ttl_s: f64,
    /// Clock skew tolerated, seconds: a lease or term counts as live until
    /// `expires_at + skew_s` for a holder's write and as expired from
    /// `expires_at - skew_s` for a take-over. 0 on SQLite, where `at` is the
    /// writing process's own clock at its statement; on PostgreSQL `at` is
    /// the server's clock at commit (deferred triggers), later than the
    /// statement's check — a change's `began_at` (its transaction's start,
    /// which dhp-chaos's audit records) bounds the check from below, so a
    /// holder's write is judged there and no commit delay need be passed.
    /// A faked clock (libfaketime) needs its offset here.
    pub skew_s: f64,
    /// Processes whose clock the harness faked, by worker or supervisor
    /// id. The store keeps their times in their own clock (SQLite's `at` is
    /// the writer's); the judge puts a time on the harness's clock with
    /// this before comparing it with a [`Fact`] (a death, a served chunk).
    #[serde(default)]
    pub clocks: BTreeMap<String, ProcClock>,
}

impl Default for Params {
    fn default() -> Self {
        Params { default_max_attempts: 3, leader_ttl_s: 5.0, skew_s: 0.0, clocks: BTreeMap::new() }
    }
}

impl Params {
    /// `at`, read from `writer`'s clock, on the harness's clock.
    pub fn real_at(&self, writer: &str, at: f64) -> f64 {
        self.clocks.get(writer).map_or(at, |c| c.real(at))
    }
}

/// A faked clock: `started + offset_s + rate × (real − started)`, as
/// libfaketime runs it from the process's start.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProcClock {
    /// When the process started, on the harness's clock.
    pub started: f64,
    /// Seconds ahead (negative: behind) at start.
    pub offset_s: f64,
    /// Seconds of its clock per real second.
    pub rate: f64,
}

impl ProcClock {
    /// A time this clock showed, on the real clock.
    pub fn real(&self, t: f64) -> f64 {
        let rate = if self.rate.is_finite() && self.rate > 0.0 { self.rate } else { 1.0 };
        self.started + (t - self.started - self.offset_s) / rate
    }
}

/// A step that broke the strict model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Violation {
    /// The rule, e.g. `§7.1 orphan needs a live leader term [leader-election]`.
    pub rule: String,
    /// The audit seq of the (last) offending change.
    pub seq: i64,
    /// The row before.
    pub before: Option<Value>,
    /// The row after.
    pub after: Option<Value>,
    /// The operation(s) that came closest, and why each does not fit.
    pub closest: Vec<String>,
    /// One line for a human.
    pub message: String,
}

/// A step legal only in the [`Variant`] the judge was built with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Excuse {
    /// The audit seq.
    pub seq: i64,
    /// The strict rule it breaks.
    pub rule: String,
    /// Why the variant allows it, given what the harness saw.
    pub why: String,
}

/// The judge's verdict over one round.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Changes fed (every one is judged: `legal + excused + violations +
    /// indeterminate` covers all of them, counted per change).
    pub consumed: usize,
    /// Changes that were the effect of a legal operation.
    pub legal: usize,
    /// Changes legal only in the variant.
    pub excused: Vec<Excuse>,
    /// Changes no legal operation explains.
    pub violations: Vec<Violation>,
    /// Changes of an operation left half done — the first of the
    /// reference's two statements, cut by a SIGKILL or overtaken by another
    /// operation (a torn state, docs/torn-states.md), or a REPLACE with no
    /// INSERT after it — neither legal nor illegal (Knossos's `:info`).
    pub indeterminate: usize,
    /// What the audit could not decide, said rather than guessed.
    pub undecidable: Vec<String>,
    /// Changes in the groups that were excused, violated or undecidable
    /// (one operation can be several changes): `consumed == legal +
    /// flagged + indeterminate` proves every change was judged.
    pub flagged: usize,
}

impl Report {
    /// Every consumed change was judged (the audit was read to its end).
    pub fn all_judged(&self) -> bool {
        self.consumed == self.legal + self.flagged + self.indeterminate
    }
}
