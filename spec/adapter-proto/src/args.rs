//! Each op's `args`, as `spec/adapter/request.schema.json` has them
//! (`#/$defs/<op>`): unknown members are refused, as the schema's
//! `additionalProperties: false` does.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A worker's hold on a handoff as it presents it: what claim/recover
/// hand out, carried by every op a holder performs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Token {
    /// The store root.
    pub root: String,
    /// The worker presenting the hold (may be malformed on purpose).
    pub worker: String,
    /// The handoff id (may be malformed on purpose).
    pub hid: String,
    /// The fencing token.
    pub fence: i64,
}

/// An op of a holder: the [`Token`]'s members and the op's own.
macro_rules! held {
    ($(#[$doc:meta])* $name:ident { $($(#[$fdoc:meta])* $field:ident: $ty:ty),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            /// The store root.
            pub root: String,
            /// The worker presenting the hold.
            pub worker: String,
            /// The handoff id.
            pub hid: String,
            /// The fencing token.
            pub fence: i64,
            $($(#[$fdoc])* pub $field: $ty,)*
        }

        impl $name {
            /// The hold presented.
            pub fn token(&self) -> Token {
                Token { root: self.root.clone(), worker: self.worker.clone(), hid: self.hid.clone(), fence: self.fence }
            }
        }
    };
}

held!(
    /// `checkpoint`.
    Checkpoint { /// The state to save.
    state: Value }
);
held!(
    /// `note_step`.
    NoteStep { /// Steps taken.
    n: i64 }
);
held!(
    /// `note_spend`.
    NoteSpend { /// Dollars spent.
    usd: f64 }
);
held!(
    /// `complete`.
    Complete { /// The handoff's result.
    result: Value }
);
held!(
    /// `release`.
    Release { /// Why.
    reason: String }
);
held!(
    /// `record_effect`.
    RecordEffect { /// The effect's step.
    step_id: String, /// Its result.
    result: Value }
);
held!(
    /// `effect_done`.
    EffectDone { /// The effect's step.
    step_id: String }
);
held!(
    /// `note_activity`.
    NoteActivity { /// The activity's digest.
    digest: String }
);
held!(
    /// `require_capability`.
    RequireCapability { /// The capability's domain.
    domain: String, /// The resource in it.
    resource: String }
);
held!(
    /// `request_approval`.
    RequestApproval { /// The action's class.
    action_class: String, /// What is to be approved.
    details: Map<String, Value>, /// Seconds until it expires.
    timeout_s: f64 }
);
held!(
    /// `await_approval`.
    AwaitApproval { /// The approval waited for.
    approval_id: String }
);

/// `hello`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hello {
    /// The adapter protocol the runner speaks.
    pub adapter_protocol: i64,
}

/// An op without arguments (`shutdown`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Nothing {}

/// `open`, `leadership`, `expire_leadership`: a store root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Root {
    /// The store root.
    pub root: String,
}

/// `ack`, `last_checkpoint`, `status`, `load_envelope`, `ownership`,
/// `expire_lease`, `approvals`: a handoff of a store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Handoff {
    /// The store root.
    pub root: String,
    /// The handoff id.
    pub hid: String,
}

/// `claim`, `recover`: a worker asking for a handoff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Take {
    /// The store root.
    pub root: String,
    /// The worker.
    pub worker: String,
    /// The handoff id.
    pub hid: String,
}

/// `ensure_leadership`, `scan`: a supervisor of a store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Supervise {
    /// The store root.
    pub root: String,
    /// The supervisor's id.
    pub supervisor: String,
}

/// `liveness_publish`: a worker of a store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Liveness {
    /// The store root.
    pub root: String,
    /// The worker.
    pub worker: String,
}

/// `build_envelope`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildEnvelope {
    /// The task kind.
    pub kind: String,
    /// The task's inputs.
    pub inputs: Value,
    /// The output schema.
    pub output_schema: Value,
    /// The budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Map<String, Value>>,
    /// The capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Map<String, Value>>,
    /// Stall retries before the dead-letter queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_stall_retries: Option<i64>,
    /// The idempotency key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// Who created it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
}

/// `dispatch`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dispatch {
    /// The store root.
    pub root: String,
    /// The envelope (any JSON: malformed ones are sent on purpose).
    pub envelope: Value,
}

/// `ship_envelope`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShipEnvelope {
    /// The store root.
    pub root: String,
    /// The handoff id.
    pub hid: String,
    /// The transport log's path.
    pub log: String,
}

/// `ship_checkpoint`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShipCheckpoint {
    /// The transport log's path.
    pub log: String,
    /// The checkpoint's seq.
    pub seq: i64,
    /// Its state.
    pub state: Value,
}

/// `ingest`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ingest {
    /// The store root.
    pub root: String,
    /// The transport log's path.
    pub log: String,
}

/// `suspend`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suspend {
    /// The store root.
    pub root: String,
    /// The handoff id.
    pub hid: String,
    /// Where the bundle goes.
    pub path: String,
}

/// `resume`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resume {
    /// The store root.
    pub root: String,
    /// The bundle's path.
    pub path: String,
}

/// `canonical`, `handoff_id`: a JSON text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Text {
    /// The text.
    pub text: String,
}

/// `decide_approval`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecideApproval {
    /// The store root.
    pub root: String,
    /// The approval.
    pub approval_id: String,
    /// Approved, or denied.
    pub approved: bool,
}
