//! Each op's ok result, as `spec/adapter/reply.schema.json` has them
//! (`#/$defs/<op>`). A result may carry members beyond these (the schema
//! allows them); they are not read.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Number, Value};

/// A member that must be present and may be null (serde takes a missing
/// `Option` for `None`; the schema does not).
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    Option::deserialize(d)
}

/// `hello`: who the implementation is and what it declares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    /// The implementation's name (`dhp-rs`, `dhp-protocol`, …).
    pub implementation: String,
    /// Its version.
    pub version: String,
    /// The DHP version it implements.
    pub protocol_version: String,
    /// The adapter protocol it speaks ([`crate::ADAPTER_PROTOCOL`]).
    pub adapter_protocol: i64,
    /// Optional features it declares ([`crate::feature`]).
    pub features: Vec<String>,
    /// The adapter's process id, when it reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u64>,
}

/// An op that answers nothing but success.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Done {}

/// `open`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Open {
    /// The SQLite file of a standard store, if it is one.
    #[serde(deserialize_with = "nullable")]
    pub store_file: Option<String>,
}

/// `build_envelope`, `load_envelope`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// The envelope.
    pub envelope: Map<String, Value>,
}

/// `dispatch`, `resume`: the handoff's id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hid {
    /// The handoff id.
    pub hid: String,
}

/// `claim`, `recover`: the fence granted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fence {
    /// The fencing token.
    pub fence: i64,
}

/// `checkpoint`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seq {
    /// The committed seq.
    pub seq: u64,
}

/// `heartbeat`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Heartbeat {
    /// Seconds left on the lease.
    pub expires_in_s: f64,
}

/// `last_checkpoint`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastCheckpoint {
    /// The last state saved, if any.
    #[serde(deserialize_with = "nullable")]
    pub state: Option<Map<String, Value>>,
}

/// A handoff's status (the envelope's `execution.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HandoffStatus {
    /// Dispatched, not claimed.
    Pending,
    /// Held by a worker.
    Running,
    /// Suspended to a bundle.
    Suspended,
    /// Completed.
    Completed,
    /// Failed (dead-lettered).
    Failed,
    /// Orphaned, waiting for recovery.
    Orphaned,
}

/// `status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// The handoff id.
    pub handoff_id: String,
    /// Its status.
    pub status: HandoffStatus,
    /// The attempt.
    pub attempt: i64,
    /// Checkpoints saved.
    pub checkpoints: u64,
    /// The holder, if any.
    #[serde(deserialize_with = "nullable")]
    pub owner: Option<String>,
    /// The holder's fence, if any.
    #[serde(deserialize_with = "nullable")]
    pub fence: Option<i64>,
    /// Steps noted (kept as written: an integer stays one).
    pub steps: Number,
    /// Dollars spent (kept as written).
    pub spend_usd: Number,
    /// The result, or null.
    pub result: Value,
    /// Whether the result was acknowledged.
    pub acked: bool,
    /// The error, if failed.
    #[serde(deserialize_with = "nullable")]
    pub error: Option<String>,
    /// Why it was orphaned, if it was.
    #[serde(default)]
    pub orphan_reason: Option<String>,
    /// Stalls counted, when the implementation reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall_count: Option<i64>,
}

/// A handoff's holder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OwnershipRow {
    /// The worker.
    pub holder: String,
    /// Its fence.
    pub fence: i64,
    /// When its lease ends (Unix seconds).
    pub lease_expires_at: f64,
}

/// `ownership`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ownership {
    /// The holder, if any.
    #[serde(deserialize_with = "nullable")]
    pub ownership: Option<OwnershipRow>,
}

/// A store's leader.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeaderRow {
    /// The supervisor.
    pub holder: String,
    /// When its term ends (Unix seconds).
    pub expires_at: f64,
}

/// `leadership`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Leadership {
    /// The leader, if any.
    #[serde(deserialize_with = "nullable")]
    pub leadership: Option<LeaderRow>,
}

/// `ensure_leadership`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leader {
    /// Whether the supervisor leads.
    pub leader: bool,
}

/// One action of a scan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanAction {
    /// The handoff.
    pub hid: String,
    /// What the supervisor did (`orphaned`, `dlq`, …).
    pub action: String,
}

/// `scan`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scan {
    /// What the scan did.
    pub actions: Vec<ScanAction>,
}

/// `expire_lease`, `expire_leadership`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Updated {
    /// Whether a row changed.
    pub updated: bool,
}

/// `ingest`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ingest {
    /// The handoff ingested.
    pub handoff_id: String,
    /// Checkpoints taken in.
    pub checkpoints_ingested: u64,
    /// Lines skipped.
    pub lines_skipped: u64,
}

/// `suspend`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suspend {
    /// The bundle's size.
    pub bytes: u64,
}

/// `record_effect`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recorded {
    /// Whether this call recorded it (false: it was already).
    pub recorded: bool,
}

/// `effect_done`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EffectDone {
    /// Whether the effect was recorded.
    pub done: bool,
    /// Its result, or null.
    pub result: Value,
}

/// `note_activity`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoteActivity {
    /// How often this digest came in a row.
    pub repeat_count: u64,
}

/// `canonical`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Canonical {
    /// The canonical bytes, hex.
    pub canonical_hex: String,
    /// Their SHA-256, hex.
    pub sha256: String,
    /// An object's state rendering, else null.
    #[serde(deserialize_with = "nullable")]
    pub state_json: Option<String>,
    /// Its hash, else null.
    #[serde(deserialize_with = "nullable")]
    pub state_hash: Option<String>,
}

/// `handoff_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoffId {
    /// The envelope's handoff id.
    pub handoff_id: String,
    /// Its inputs' hash.
    pub input_hash: String,
}

/// An approval's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalStatus {
    /// Waiting for a decision.
    Pending,
    /// Approved.
    Approved,
    /// Denied.
    Denied,
    /// Timed out.
    Expired,
}

/// One approval of a handoff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    /// Its id.
    pub approval_id: String,
    /// The action's class.
    pub action_class: String,
    /// Its state.
    pub status: ApprovalStatus,
}

/// `approvals`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approvals {
    /// The handoff's approvals.
    pub approvals: Vec<Approval>,
}

/// `decide_approval`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decided {
    /// Whether this call decided it.
    pub decided: bool,
}
