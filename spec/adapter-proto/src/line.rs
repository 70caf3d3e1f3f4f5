//! The lines: a request with its id, barrier time and clock offset; a
//! reply with its id and either the result or a typed error.

use crate::{Op, ProtoError, Request};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// One request line (runner → adapter).
#[derive(Debug, Clone, PartialEq)]
pub struct RequestLine {
    /// Echoed unchanged in the reply.
    pub id: u64,
    /// The op and its arguments.
    pub request: Request,
    /// Barrier: perform the op no earlier than this Unix time (seconds).
    pub at: Option<f64>,
    /// Feature `clock-control`: seconds the runner moved the clock on.
    pub clock_offset_s: Option<f64>,
}

impl RequestLine {
    /// The line as sent (without the newline).
    pub fn to_value(&self) -> Value {
        let mut v = json!({"id": self.id, "op": self.request.op().as_str(), "args": self.request.args()});
        if let Some(at) = self.at {
            v["at"] = json!(at);
        }
        if let Some(o) = self.clock_offset_s {
            v["clock_offset_s"] = json!(o);
        }
        v
    }

    /// Read a request line. An adapter answers a line that is no request
    /// with an error reply: [`RequestLine::id_of`] gives the id to answer
    /// with, [`ProtoError::UnknownOp`] is the `Unsupported` kind, any other
    /// error `BadRequest`.
    pub fn parse(line: &Value) -> Result<RequestLine, ProtoError> {
        let obj = line.as_object().ok_or_else(|| ProtoError::NotAnObject(short(line)))?;
        let id = obj
            .get("id")
            .and_then(Value::as_u64)
            .ok_or_else(|| ProtoError::BadMember("id must be an integer from 0".into()))?;
        let name =
            obj.get("op").and_then(Value::as_str).ok_or_else(|| ProtoError::BadMember("op must be a string".into()))?;
        let op = Op::from_name(name).ok_or_else(|| ProtoError::UnknownOp(name.to_string()))?;
        let args = obj.get("args").cloned().ok_or_else(|| ProtoError::BadMember("args is missing".into()))?;
        let number = |key: &str| match obj.get(key) {
            None => Ok(None),
            Some(v) => {
                v.as_f64().map(Some).ok_or_else(|| ProtoError::BadMember(format!("{key} must be a number, not {v}")))
            }
        };
        let (at, clock_offset_s) = (number("at")?, number("clock_offset_s")?);
        if let Some(k) = obj.keys().find(|k| !["id", "op", "args", "at", "clock_offset_s"].contains(&k.as_str())) {
            return Err(ProtoError::BadMember(format!("unknown member {k:?}")));
        }
        Ok(RequestLine { id, request: Request::from_args(op, args)?, at, clock_offset_s })
    }

    /// The id a reply to `line` carries: its `id`, or 0 when it has none.
    pub fn id_of(line: &Value) -> u64 {
        line.get("id").and_then(Value::as_u64).unwrap_or(0)
    }
}

/// A typed error reply: `kind` is the reference's exception class name
/// or an adapter kind (`Unsupported`, `BadRequest`, `StoreError`,
/// `Internal`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorBody {
    /// The error class.
    pub kind: String,
    /// The implementation's message.
    pub message: String,
}

/// One reply line (adapter → runner).
#[derive(Debug, Clone, PartialEq)]
pub struct ReplyLine {
    /// The request's id.
    pub id: u64,
    /// The result object of an ok reply, or the error.
    pub outcome: Result<Map<String, Value>, ErrorBody>,
}

impl ReplyLine {
    /// The line as sent (without the newline).
    pub fn to_value(&self) -> Value {
        match &self.outcome {
            Ok(result) => json!({"id": self.id, "ok": true, "result": result}),
            Err(e) => json!({"id": self.id, "ok": false, "error": e}),
        }
    }

    /// Read a reply line: `{"id", "ok": true, "result": {…}}` or
    /// `{"id", "ok": false, "error": {"kind", "message"}}`, nothing more.
    pub fn parse(line: &Value) -> Result<ReplyLine, ProtoError> {
        let obj = line.as_object().ok_or_else(|| ProtoError::NotAnObject(short(line)))?;
        let id = obj
            .get("id")
            .and_then(Value::as_u64)
            .ok_or_else(|| ProtoError::BadMember("id must be an integer from 0".into()))?;
        let ok = obj
            .get("ok")
            .and_then(Value::as_bool)
            .ok_or_else(|| ProtoError::BadMember("ok must be a boolean".into()))?;
        let (key, outcome) = if ok {
            let r = obj.get("result").and_then(Value::as_object);
            ("result", Ok(r.ok_or_else(|| ProtoError::BadMember("result must be an object".into()))?.clone()))
        } else {
            let e = obj.get("error").cloned().ok_or_else(|| ProtoError::BadMember("error is missing".into()))?;
            let e: ErrorBody = serde_json::from_value(e).map_err(|e| ProtoError::BadMember(format!("error: {e}")))?;
            if e.kind.is_empty() {
                return Err(ProtoError::BadMember("error.kind is empty".into()));
            }
            ("error", Err(e))
        };
        if let Some(k) = obj.keys().find(|k| !["id", "ok", key].contains(&k.as_str())) {
            return Err(ProtoError::BadMember(format!("unknown member {k:?}")));
        }
        Ok(ReplyLine { id, outcome })
    }
}

/// A value for a message, at most 200 characters of it.
fn short(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}
