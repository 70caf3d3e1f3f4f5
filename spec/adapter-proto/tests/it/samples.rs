//! One message per op with every member the schema knows filled in.

use dhp_adapter_proto::{args, results, Op, Request, Response};
use serde_json::{json, Map, Number, Value};

fn token() -> (String, String, String, i64) {
    ("/r".into(), "w1".into(), "h1".into(), 3)
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

macro_rules! held {
    ($t:ident { $($f:ident: $e:expr),* }) => {{
        let (root, worker, hid, fence) = token();
        args::$t { root, worker, hid, fence, $($f: $e),* }
    }};
}

/// A request of `op` (exhaustive: a new op must have a sample).
pub fn request(op: Op) -> Request {
    let handoff = || args::Handoff { root: "/r".into(), hid: "h1".into() };
    let root = || args::Root { root: "/r".into() };
    let take = || args::Take { root: "/r".into(), worker: "w1".into(), hid: "h1".into() };
    let sup = || args::Supervise { root: "/r".into(), supervisor: "s1".into() };
    match op {
        Op::Hello => Request::Hello(args::Hello { adapter_protocol: 1 }),
        Op::Shutdown => Request::Shutdown(args::Nothing {}),
        Op::Open => Request::Open(root()),
        Op::BuildEnvelope => Request::BuildEnvelope(args::BuildEnvelope {
            kind: "k".into(),
            inputs: json!({"a": 1}),
            output_schema: json!({"type": "object"}),
            budget: Some(obj(json!({"max_steps": 3}))),
            capabilities: Some(obj(json!({"fs": ["/tmp"]}))),
            max_stall_retries: Some(2),
            idempotency_key: Some("key".into()),
            created_by: Some("me".into()),
        }),
        Op::Dispatch => Request::Dispatch(args::Dispatch { root: "/r".into(), envelope: json!({"x": 1}) }),
        Op::Claim => Request::Claim(take()),
        Op::Recover => Request::Recover(take()),
        Op::Checkpoint => Request::Checkpoint(held!(Checkpoint { state: json!({"n": 1}) })),
        Op::Heartbeat => {
            let (root, worker, hid, fence) = token();
            Request::Heartbeat(args::Token { root, worker, hid, fence })
        }
        Op::NoteStep => Request::NoteStep(held!(NoteStep { n: 2 })),
        Op::NoteSpend => Request::NoteSpend(held!(NoteSpend { usd: 0.5 })),
        Op::Complete => Request::Complete(held!(Complete { result: json!({"ok": 1}) })),
        Op::Release => Request::Release(held!(Release { reason: "r".into() })),
        Op::Ack => Request::Ack(handoff()),
        Op::LastCheckpoint => Request::LastCheckpoint(handoff()),
        Op::Status => Request::Status(handoff()),
        Op::LoadEnvelope => Request::LoadEnvelope(handoff()),
        Op::Ownership => Request::Ownership(handoff()),
        Op::Leadership => Request::Leadership(root()),
        Op::EnsureLeadership => Request::EnsureLeadership(sup()),
        Op::Scan => Request::Scan(sup()),
        Op::ExpireLease => Request::ExpireLease(handoff()),
        Op::ExpireLeadership => Request::ExpireLeadership(root()),
        Op::ShipEnvelope => {
            Request::ShipEnvelope(args::ShipEnvelope { root: "/r".into(), hid: "h1".into(), log: "/l".into() })
        }
        Op::ShipCheckpoint => {
            Request::ShipCheckpoint(args::ShipCheckpoint { log: "/l".into(), seq: 0, state: json!({"n": 1}) })
        }
        Op::Ingest => Request::Ingest(args::Ingest { root: "/r".into(), log: "/l".into() }),
        Op::Suspend => Request::Suspend(args::Suspend { root: "/r".into(), hid: "h1".into(), path: "/b".into() }),
        Op::Resume => Request::Resume(args::Resume { root: "/r".into(), path: "/b".into() }),
        Op::RecordEffect => Request::RecordEffect(held!(RecordEffect { step_id: "s".into(), result: json!({"r": 1}) })),
        Op::EffectDone => Request::EffectDone(held!(EffectDone { step_id: "s".into() })),
        Op::NoteActivity => Request::NoteActivity(held!(NoteActivity { digest: "d".into() })),
        Op::RequireCapability => {
            Request::RequireCapability(held!(RequireCapability { domain: "fs".into(), resource: "/tmp".into() }))
        }
        Op::Canonical => Request::Canonical(args::Text { text: "{}".into() }),
        Op::HandoffId => Request::HandoffId(args::Text { text: "{}".into() }),
        Op::LivenessPublish => Request::LivenessPublish(args::Liveness { root: "/r".into(), worker: "w1".into() }),
        Op::RequestApproval => Request::RequestApproval(held!(RequestApproval {
            action_class: "payment".into(),
            details: obj(json!({"usd": 5})),
            timeout_s: 1.5
        })),
        Op::Approvals => Request::Approvals(handoff()),
        Op::DecideApproval => Request::DecideApproval(args::DecideApproval {
            root: "/r".into(),
            approval_id: "a1".into(),
            approved: true,
        }),
        Op::AwaitApproval => Request::AwaitApproval(held!(AwaitApproval { approval_id: "a1".into() })),
    }
}

/// An ok result of `op` (exhaustive), with every optional member present.
pub fn response(op: Op) -> Response {
    let done = results::Done {};
    let env = || results::Envelope { envelope: obj(json!({"dhp_version": "1.3"})) };
    match op {
        Op::Hello => Response::Hello(results::Hello {
            implementation: "x".into(),
            version: "1".into(),
            protocol_version: "1.3".into(),
            adapter_protocol: 1,
            features: vec!["effects".into(), "clock-control".into()],
            pid: Some(42),
        }),
        Op::Shutdown => Response::Shutdown(done),
        Op::Open => Response::Open(results::Open { store_file: Some("/r/dhp.sqlite3".into()) }),
        Op::BuildEnvelope => Response::BuildEnvelope(env()),
        Op::Dispatch => Response::Dispatch(results::Hid { hid: "h1".into() }),
        Op::Claim => Response::Claim(results::Fence { fence: 1 }),
        Op::Recover => Response::Recover(results::Fence { fence: 2 }),
        Op::Checkpoint => Response::Checkpoint(results::Seq { seq: 0 }),
        Op::Heartbeat => Response::Heartbeat(results::Heartbeat { expires_in_s: 29.5 }),
        Op::NoteStep => Response::NoteStep(done),
        Op::NoteSpend => Response::NoteSpend(done),
        Op::Complete => Response::Complete(done),
        Op::Release => Response::Release(done),
        Op::Ack => Response::Ack(done),
        Op::LastCheckpoint => Response::LastCheckpoint(results::LastCheckpoint { state: Some(obj(json!({"n": 1}))) }),
        Op::Status => Response::Status(results::Status {
            handoff_id: "h1".into(),
            status: results::HandoffStatus::Running,
            attempt: 1,
            checkpoints: 2,
            owner: Some("w1".into()),
            fence: Some(1),
            steps: Number::from(3),
            spend_usd: Number::from_f64(0.25).unwrap_or(Number::from(0)),
            result: Value::Null,
            acked: false,
            error: Some("e".into()),
            orphan_reason: Some("lease-expired".into()),
            stall_count: Some(1),
        }),
        Op::LoadEnvelope => Response::LoadEnvelope(env()),
        Op::Ownership => Response::Ownership(results::Ownership {
            ownership: Some(results::OwnershipRow { holder: "w1".into(), fence: 1, lease_expires_at: 1.7e9 }),
        }),
        Op::Leadership => Response::Leadership(results::Leadership {
            leadership: Some(results::LeaderRow { holder: "s1".into(), expires_at: 1.7e9 }),
        }),
        Op::EnsureLeadership => Response::EnsureLeadership(results::Leader { leader: true }),
        Op::Scan => Response::Scan(results::Scan {
            actions: vec![results::ScanAction { hid: "h1".into(), action: "orphaned".into() }],
        }),
        Op::ExpireLease => Response::ExpireLease(results::Updated { updated: true }),
        Op::ExpireLeadership => Response::ExpireLeadership(results::Updated { updated: false }),
        Op::ShipEnvelope => Response::ShipEnvelope(done),
        Op::ShipCheckpoint => Response::ShipCheckpoint(done),
        Op::Ingest => {
            Response::Ingest(results::Ingest { handoff_id: "h1".into(), checkpoints_ingested: 2, lines_skipped: 0 })
        }
        Op::Suspend => Response::Suspend(results::Suspend { bytes: 100 }),
        Op::Resume => Response::Resume(results::Hid { hid: "h1".into() }),
        Op::RecordEffect => Response::RecordEffect(results::Recorded { recorded: true }),
        Op::EffectDone => Response::EffectDone(results::EffectDone { done: true, result: json!({"r": 1}) }),
        Op::NoteActivity => Response::NoteActivity(results::NoteActivity { repeat_count: 1 }),
        Op::RequireCapability => Response::RequireCapability(done),
        Op::Canonical => Response::Canonical(results::Canonical {
            canonical_hex: "7b7d".into(),
            sha256: "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a".into(),
            state_json: Some("{}".into()),
            state_hash: Some("sha256:x".into()),
        }),
        Op::HandoffId => Response::HandoffId(results::HandoffId { handoff_id: "h1".into(), input_hash: "x".into() }),
        Op::LivenessPublish => Response::LivenessPublish(done),
        Op::RequestApproval => Response::RequestApproval(done),
        Op::Approvals => Response::Approvals(results::Approvals {
            approvals: vec![results::Approval {
                approval_id: "a1".into(),
                action_class: "payment".into(),
                status: results::ApprovalStatus::Pending,
            }],
        }),
        Op::DecideApproval => Response::DecideApproval(results::Decided { decided: true }),
        Op::AwaitApproval => Response::AwaitApproval(done),
    }
}
