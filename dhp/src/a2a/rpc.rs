//! JSON-RPC 2.0 framing and the A2A error codes (as `a2a-sdk` 1.3.0's
//! `JSON_RPC_ERROR_CODE_MAP`).

use serde_json::{json, Value};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
pub const TASK_NOT_FOUND: i64 = -32001;
pub const TASK_NOT_CANCELABLE: i64 = -32002;
pub const PUSH_NOT_SUPPORTED: i64 = -32003;
pub const UNSUPPORTED_OPERATION: i64 = -32004;
pub const VERSION_NOT_SUPPORTED: i64 = -32009;

/// A JSON-RPC error object.
#[derive(Debug, Clone)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError { code, message: message.into() }
    }
    pub fn params(message: impl Into<String>) -> Self {
        Self::new(INVALID_PARAMS, message)
    }
    pub fn invalid_params(e: impl std::fmt::Display) -> Self {
        Self::new(INVALID_PARAMS, e.to_string())
    }
    pub fn internal(e: impl std::fmt::Display) -> Self {
        Self::new(INTERNAL_ERROR, format!("Internal error: {e}"))
    }
    pub fn task_not_found(id: &str) -> Self {
        Self::new(TASK_NOT_FOUND, format!("Task not found: {}", shorten(id)))
    }
    pub fn not_cancelable(id: &str, status: &str) -> Self {
        Self::new(TASK_NOT_CANCELABLE, format!("Task cannot be canceled: {} is already {status}", shorten(id)))
    }

    /// The `error` member of a response.
    pub fn to_json(&self) -> Value {
        json!({"code": self.code, "message": self.message})
    }
}

/// An id echoed in an error message is cut short (it is untrusted input).
fn shorten(id: &str) -> String {
    let s: String = id.chars().take(80).collect();
    if s.len() < id.len() {
        format!("{s:?}…")
    } else {
        format!("{s:?}")
    }
}

/// A parsed request: its id (string, integer or null) and method.
pub struct Request {
    pub id: Value,
    pub method: String,
    pub params: Value,
}

/// Validate the JSON-RPC envelope of a request body. The id is returned
/// whenever it could be read, so even a refusal echoes it.
pub fn parse_request(body: &[u8]) -> Result<Request, (Value, RpcError)> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| (Value::Null, RpcError::new(PARSE_ERROR, format!("Invalid JSON payload: {e}"))))?;
    let Some(obj) = v.as_object() else {
        let what = if v.is_array() { "Batch requests are not supported" } else { "Invalid Request: not a JSON object" };
        return Err((Value::Null, RpcError::new(INVALID_REQUEST, what)));
    };
    let id = match obj.get("id") {
        None => Value::Null,
        Some(i @ (Value::String(_) | Value::Null)) => i.clone(),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Value::Number(n.clone()),
        Some(_) => {
            return Err((
                Value::Null,
                RpcError::new(INVALID_REQUEST, "Invalid request: id must be a string, integer, or null"),
            ))
        }
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((id, RpcError::new(INVALID_REQUEST, "Invalid request: 'jsonrpc' must be exactly '2.0'")));
    }
    let method = match obj.get("method") {
        Some(Value::String(m)) if !m.is_empty() => m.clone(),
        _ => return Err((id, RpcError::new(INVALID_REQUEST, "Method is required"))),
    };
    let params = obj.get("params").cloned().unwrap_or_else(|| json!({}));
    if !params.is_object() {
        return Err((id, RpcError::params("params must be an object")));
    }
    Ok(Request { id, method, params })
}

pub fn success(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

pub fn failure(id: &Value, e: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": e.to_json()})
}

/// A required string parameter.
pub fn str_param<'a>(params: &'a Value, key: &str) -> Result<&'a str, RpcError> {
    match params.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        Some(_) => Err(RpcError::params(format!("params.{key} must be a non-empty string"))),
        None => Err(RpcError::params(format!("params.{key} is required"))),
    }
}
