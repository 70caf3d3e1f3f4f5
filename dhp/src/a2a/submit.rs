//! What a `SendMessage` carries: the DHP task, read from the message's
//! first `data` part (or a text part holding a JSON object):
//! `{"kind", "inputs", "output_schema", "budget"}`, every field optional.
//! Without a kind it is the prime census (`inputs` `{"lo","hi","chunk"}`),
//! as the reference's bridge defaults. Inputs are wrapped `{"inline": …}`
//! as the reference's bridge does, so its workers and ours read them alike.

use super::rpc::RpcError;
use dhp_core::envelope::{self, Budget, BuildOptions};
use dhp_core::{budget, Error};
use dhp_workload::census;
use serde_json::{json, Value};

/// Longest task kind accepted.
const MAX_KIND_LEN: usize = 256;

/// A validated task, ready to become an envelope.
#[derive(Debug, Clone)]
pub struct Submission {
    pub kind: String,
    pub inputs: Value,
    pub output_schema: Value,
    pub budget: Value,
    pub context_id: String,
}

/// The reference bridge's budget for census tasks.
fn census_budget(chunks: u64) -> Value {
    let steps = i64::try_from(chunks.saturating_add(100)).unwrap_or(i64::MAX).max(2000);
    Budget { max_steps: steps, max_spend_usd: 500.0, max_wallclock_s: 5400.0, max_attempts: 5 }.to_value()
}

impl Submission {
    /// Read the task out of an A2A `Message` (protobuf JSON).
    pub fn from_message(msg: &Value) -> Result<Submission, RpcError> {
        let parts =
            msg.get("parts").and_then(Value::as_array).ok_or_else(|| RpcError::params("message.parts is missing"))?;
        let spec = integral(task_spec(parts)?);
        let obj = spec.as_object().ok_or_else(|| RpcError::params("the task must be a JSON object"))?;
        for key in obj.keys() {
            if !matches!(key.as_str(), "kind" | "inputs" | "output_schema" | "budget") {
                return Err(RpcError::params(format!(
                    "unknown task field {key:?} (kind, inputs, output_schema, budget)"
                )));
            }
        }
        let kind = match obj.get("kind") {
            None | Some(Value::Null) => census::KIND.to_string(),
            Some(Value::String(k)) if !k.is_empty() && k.len() <= MAX_KIND_LEN => k.clone(),
            Some(_) => return Err(RpcError::params(format!("kind must be a string of 1 to {MAX_KIND_LEN} bytes"))),
        };
        let inputs = obj.get("inputs").cloned().unwrap_or_else(|| json!({}));
        if !inputs.is_object() {
            return Err(RpcError::params("inputs must be a JSON object"));
        }
        let given_budget = match obj.get("budget") {
            None | Some(Value::Null) => None,
            Some(b) => {
                budget::validate(b).map_err(|e| RpcError::params(format!("budget: {e}")))?;
                Some(b.clone())
            }
        };
        let (schema, mut budget) = if kind == census::KIND {
            let spec = census_spec(&inputs)?;
            (census::output_schema(), census_budget(spec.chunks()))
        } else {
            (json!({"type": "object"}), Budget::SDK_DEFAULT.to_value())
        };
        let schema = match obj.get("output_schema") {
            None | Some(Value::Null) => schema,
            Some(s) if s.is_object() || s.is_boolean() => s.clone(),
            Some(_) => return Err(RpcError::params("output_schema must be a JSON Schema (object or boolean)")),
        };
        if let (Some(m), Some(Value::Object(g))) = (budget.as_object_mut(), given_budget) {
            m.extend(g);
        }
        let context_id = match msg.get("contextId").and_then(Value::as_str) {
            Some(c) if !c.is_empty() => c.to_string(),
            _ => format!("ctx-{}", uuid::Uuid::new_v4().simple()),
        };
        Ok(Submission { kind, inputs: json!({"inline": inputs}), output_schema: schema, budget, context_id })
    }

    /// The envelope: `provenance.a2a_task_id` is set before the id is
    /// computed, so the binding is covered by the handoff id (the reference
    /// adds it afterwards; both read it the same way).
    pub fn envelope(&self, task_id: &str) -> Result<Value, Error> {
        let mut env = envelope::build(
            &self.kind,
            self.inputs.clone(),
            self.output_schema.clone(),
            BuildOptions {
                budget: Some(self.budget.clone()),
                created_by: Some(format!("a2a-bridge:{task_id}")),
                trace_id: Some(self.context_id.clone()),
                ..Default::default()
            },
        )?;
        if let Some(p) = env.get_mut("provenance").and_then(Value::as_object_mut) {
            p.insert("a2a_task_id".into(), json!(task_id));
        }
        let hid = envelope::handoff_id(&env)?;
        env["handoff_id"] = json!(hid);
        Ok(env)
    }
}

/// Largest integer a double holds exactly (2^53).
const EXACT: f64 = 9_007_199_254_740_992.0;

/// A data part is a protobuf `Value`, which has no integers: the SDK sends
/// 5 as 5.0. Whole numbers within ±2^53 become integers again, so a census
/// bound or a budget cap reads as the integer the client meant.
fn integral(v: Value) -> Value {
    match v {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() <= EXACT => json!(f as i64),
            _ => Value::Number(n),
        },
        Value::Array(a) => Value::Array(a.into_iter().map(integral).collect()),
        Value::Object(m) => Value::Object(m.into_iter().map(|(k, v)| (k, integral(v))).collect()),
        other => other,
    }
}

/// The first data part, else the first text part that is a JSON object.
fn task_spec(parts: &[Value]) -> Result<Value, RpcError> {
    if let Some(d) = parts.iter().find_map(|p| p.get("data")) {
        return Ok(d.clone());
    }
    for p in parts {
        if let Some(t) = p.get("text").and_then(Value::as_str) {
            if let Ok(v @ Value::Object(_)) = dhp_core::json::parse(t) {
                return Ok(v);
            }
        }
    }
    Err(RpcError::params("the message carries no task: give a data part (or a JSON text part) {\"kind\", \"inputs\", \"output_schema\", \"budget\"}"))
}

/// Census inputs `{"lo", "hi", "chunk"}`, bounded as `dhp dispatch --census`.
fn census_spec(inputs: &Value) -> Result<census::Spec, RpcError> {
    let num = |k: &str| {
        inputs
            .get(k)
            .and_then(Value::as_u64)
            .ok_or_else(|| RpcError::params(format!("census input {k:?} must be a non-negative integer")))
    };
    census::Spec::new(num("lo")?, num("hi")?, num("chunk")?).map_err(|e| RpcError::params(e.to_string()))
}
