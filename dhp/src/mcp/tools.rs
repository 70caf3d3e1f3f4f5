//! The 18 tools: names, parameters and JSON Schemas as the reference's
//! server lists them, with descriptions an agent can plan from. Which of
//! them a server offers depends on its [`Role`]: the decisions on approval
//! requests are never offered to the agents that make the requests.

use serde_json::{json, Map, Value};

/// A parameter's JSON type.
#[derive(Clone, Copy)]
pub enum Ty {
    Str,
    Obj,
    Num,
}

/// One tool parameter (all are required, as in the reference).
pub struct Param {
    pub name: &'static str,
    pub ty: Ty,
    pub doc: &'static str,
}

/// One tool.
pub struct ToolDef {
    pub name: &'static str,
    pub doc: &'static str,
    pub params: &'static [Param],
}

const HID: Param = Param {
    name: "handoff_id",
    ty: Ty::Str,
    doc: "The handoff id returned by dhp_dispatch: exactly 64 lowercase hex characters.",
};
const WORKER: Param = Param {
    name: "worker_id",
    ty: Ty::Str,
    doc: "Your stable worker name, 1-128 characters of [A-Za-z0-9_.-]. Use the same one for every call on a handoff you hold: the lease belongs to it, and only this session (the one that claimed or recovered the handoff with it) may act under it.",
};
const APPROVAL: Param = Param {
    name: "approval_id",
    ty: Ty::Str,
    doc: "The approval id returned by dhp_request_approval (\"apr-\" + 12 hex characters).",
};

/// Every tool, in the reference's order.
pub const TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "dhp_dispatch",
        doc: "Dispatch durable work. Returns {\"ok\": true, \"handoff_id\"}. From here on the work survives the death of any worker: it waits as 'pending' until a worker calls dhp_claim. Budget defaults: 10000 steps, 500 USD, 5400 s wall clock, 5 attempts.",
        params: &[
            Param { name: "task_kind", ty: Ty::Str, doc: "What kind of work this is, e.g. \"research.summarize\" (1-128 characters). Workers pick handoffs by kind." },
            Param { name: "inputs", ty: Ty::Obj, doc: "The task's inputs as a JSON object (stored as {\"inline\": inputs}; at most DHP_MAX_ENVELOPE_BYTES)." },
            Param { name: "output_schema", ty: Ty::Obj, doc: "A JSON Schema the final result must satisfy; dhp_complete rejects a result that violates it. {} accepts any object." },
        ],
    },
    ToolDef {
        name: "dhp_claim",
        doc: "Claim a pending handoff for worker_id. Returns {\"ok\": true, \"fence\", \"resume_from\"}: resume_from is the last checkpointed state (null when starting fresh). You then hold a lease of DHP_LEASE_INTERVAL_S x DHP_LEASE_MAX_MISSED seconds (6 s by default): call dhp_heartbeat or dhp_checkpoint before it runs out, or a supervisor will hand the work to someone else.",
        params: &[HID, WORKER],
    },
    ToolDef {
        name: "dhp_checkpoint",
        doc: "Save progress after each chunk of work; also renews the lease. Returns {\"ok\": true, \"seq\"} (0, 1, 2, ...). A recovering worker resumes from the last checkpoint, so put everything needed to continue in state. Fails with FencingError/LeaseLost if you no longer hold the handoff: stop working on it then.",
        params: &[HID, WORKER, Param { name: "state", ty: Ty::Obj, doc: "Your progress as a JSON object (at most DHP_MAX_CHECKPOINT_BYTES, 1 MB by default)." }],
    },
    ToolDef {
        name: "dhp_heartbeat",
        doc: "Prove you are alive and renew the lease. Call it whenever you think for longer than a few seconds between checkpoints; a silent worker is assumed dead and its handoff is recovered by another.",
        params: &[HID, WORKER],
    },
    ToolDef {
        name: "dhp_complete",
        doc: "Finish the handoff with its result, validated against the dispatch's output_schema. A result that violates the schema is refused (ValidationError) and the handoff is parked as failed. Completing an already completed handoff again is a no-op that answers ok.",
        params: &[HID, WORKER, Param { name: "result", ty: Ty::Obj, doc: "The final result as a JSON object (at most DHP_MAX_RESULT_BYTES)." }],
    },
    ToolDef {
        name: "dhp_recover",
        doc: "Take over an orphaned handoff (its worker died or stalled and a supervisor orphaned it). Returns {\"ok\": true, \"fence\", \"resume_from\"}: continue from resume_from, the last checkpointed state. Of several racing recoverers exactly one wins; the others get OwnershipLost.",
        params: &[HID, WORKER],
    },
    ToolDef {
        name: "dhp_status",
        doc: "A handoff's summary: status (pending, running, orphaned, completed, failed, suspended), checkpoint count, attempt, owner, effects, approvals, steps, spend_usd, and the result once completed or the error once failed.",
        params: &[HID],
    },
    ToolDef {
        name: "dhp_last_checkpoint",
        doc: "The last checkpointed state of a handoff, or null if none yet. Read-only: needs no lease.",
        params: &[HID],
    },
    ToolDef {
        name: "dhp_health",
        doc: "Server health: the number of handoffs in the store and the lease time-to-live in seconds (how long you may stay silent before losing a lease).",
        params: &[],
    },
    ToolDef {
        name: "dhp_record_effect",
        doc: "Record a side effect you just performed (an email sent, a payment made) under a step_id. First write wins: recorded=true if this call stored it, false if an earlier attempt already did (then do NOT fire the effect again). Needs the lease.",
        params: &[
            HID,
            WORKER,
            Param { name: "step_id", ty: Ty::Str, doc: "A name for the effect that is stable across retries, e.g. \"send-invoice-42\"." },
            Param { name: "result", ty: Ty::Obj, doc: "What the effect returned, as a JSON object (at most DHP_MAX_CHECKPOINT_BYTES)." },
        ],
    },
    ToolDef {
        name: "dhp_effect_done",
        doc: "Check whether a side effect already happened. Returns {\"ok\": true, \"result\"}: the recorded result, or null. Call it after dhp_recover before re-executing any side effect.",
        params: &[HID, Param { name: "step_id", ty: Ty::Str, doc: "The step_id the effect was recorded under." }],
    },
    ToolDef {
        name: "dhp_note_spend",
        doc: "Record money spent (USD) against the handoff's budget. Over budget the call fails with BudgetExceeded and the supervisor fails the handoff closed. Needs the lease.",
        params: &[HID, WORKER, Param { name: "usd", ty: Ty::Num, doc: "Amount spent by this step in US dollars: a finite number >= 0." }],
    },
    ToolDef {
        name: "dhp_note_activity",
        doc: "Report an activity digest (e.g. a hash of the tool name and arguments you are about to use). Returns {\"ok\": true, \"repeat_count\"}. If the same digest repeats DHP_STALL_MAX_REPEATS times with no new checkpoint, the supervisor orphans the handoff as stalled (livelock detection). Needs the lease.",
        params: &[HID, WORKER, Param { name: "digest", ty: Ty::Str, doc: "A short fingerprint of the current activity." }],
    },
    ToolDef {
        name: "dhp_request_approval",
        doc: "Ask a human or policy engine to approve an action before you run it. Fail-closed: returns {\"ok\": true, \"approval_id\"}; the action must NOT run until dhp_approval_status says approved. You cannot decide it yourself: the decision comes from another channel (`dhp decide`, or a `dhp mcp --decider` server). Requests expire after 300 s. Needs the lease.",
        params: &[
            HID,
            WORKER,
            Param { name: "action_class", ty: Ty::Str, doc: "One of \"read\", \"write\", \"financial\", \"destructive\"." },
            Param { name: "details", ty: Ty::Obj, doc: "What the approver needs to decide, as a JSON object (e.g. amount, recipient)." },
        ],
    },
    ToolDef {
        name: "dhp_approval_status",
        doc: "An approval's status: pending, approved, denied or expired. Only approved means the action may run. Returns {\"ok\": true, \"status\", \"action_class\"}.",
        params: &[APPROVAL],
    },
    ToolDef {
        name: "dhp_approve",
        doc: "Approve a pending approval request. Offered only by a server started with --decider (the human or policy side), never to the agent that asked. decided=false when it was not pending any more.",
        params: &[APPROVAL],
    },
    ToolDef {
        name: "dhp_deny",
        doc: "Deny a pending approval request. Offered only by a server started with --decider (the human or policy side). decided=false when it was not pending any more.",
        params: &[APPROVAL],
    },
    ToolDef {
        name: "dhp_require_capability",
        doc: "Fail-closed capability check before touching the network, the file system or an external service: granted only if the dispatch's contract declares (domain, resource); domain \"dhp\" is always granted. A denial answers code CapabilityDenied. Every check is audited. Needs the lease.",
        params: &[
            HID,
            WORKER,
            Param { name: "domain", ty: Ty::Str, doc: "The capability domain, e.g. \"network\" or \"filesystem\"." },
            Param { name: "resource", ty: Ty::Str, doc: "The resource within the domain, e.g. \"api.example.com\"." },
        ],
    },
];

/// What a `dhp mcp` server is for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Role {
    /// The default: the tools an agent (a worker or a dispatcher) uses;
    /// every tool but the two decisions.
    Agent,
    /// `--decider`: for the human or policy engine that decides approval
    /// requests: the decisions and what is needed to read the request.
    Decider,
}

/// The tools only a decider is offered.
const DECISIONS: &[&str] = &["dhp_approve", "dhp_deny"];
/// The tools a decider is offered besides the decisions (read-only).
const DECIDER_READS: &[&str] = &["dhp_approval_status", "dhp_status", "dhp_health"];

impl Role {
    /// Whether this role is offered tool `name`.
    pub fn offers(self, name: &str) -> bool {
        match self {
            Role::Agent => !DECISIONS.contains(&name),
            Role::Decider => DECISIONS.contains(&name) || DECIDER_READS.contains(&name),
        }
    }
}

/// The tool named `name`, if `role` is offered it.
pub fn find(role: Role, name: &str) -> Option<&'static ToolDef> {
    TOOLS.iter().find(|t| t.name == name && role.offers(t.name))
}

/// The tools `role` is offered, in the reference's order.
pub fn offered(role: Role) -> impl Iterator<Item = &'static ToolDef> {
    TOOLS.iter().filter(move |t| role.offers(t.name))
}

/// "task_kind" → "Task Kind", as pydantic titles the reference's fields.
fn title(name: &str) -> String {
    name.split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_uppercase().chain(c).collect::<String>()).unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The input schema, shaped like the reference's (plus descriptions).
pub fn input_schema(t: &ToolDef) -> Map<String, Value> {
    let mut props = Map::new();
    for p in t.params {
        let mut s = json!({"title": title(p.name), "description": p.doc});
        match p.ty {
            Ty::Str => s["type"] = json!("string"),
            Ty::Num => s["type"] = json!("number"),
            Ty::Obj => {
                s["type"] = json!("object");
                s["additionalProperties"] = json!(true);
            }
        }
        props.insert(p.name.into(), s);
    }
    let mut m = Map::new();
    m.insert("properties".into(), Value::Object(props));
    if !t.params.is_empty() {
        m.insert("required".into(), json!(t.params.iter().map(|p| p.name).collect::<Vec<_>>()));
    }
    m.insert("type".into(), json!("object"));
    m.insert("title".into(), json!(format!("{}Arguments", t.name)));
    m
}

/// The output schema: like the reference, one string field `result`
/// holding the JSON reply text.
pub fn output_schema(t: &ToolDef) -> Map<String, Value> {
    let v = json!({
        "properties": {"result": {"title": "Result", "type": "string"}},
        "required": ["result"],
        "type": "object",
        "title": format!("{}Output", t.name),
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}
