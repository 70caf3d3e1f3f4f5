//! The handoff envelope: identity, input binding and result validation
//! (docs/PROTOCOL.md §1).
//!
//! An envelope is kept as a `serde_json::Value` in the order the reference
//! builds it, so fields this crate does not know survive a round trip and
//! the store text matches Python's byte for byte.

use crate::error::{Error, Result};
use crate::json;
use serde_json::{json, Map, Value};
use std::time::{SystemTime, UNIX_EPOCH};

/// The envelope `version` field the reference writes.
pub const VERSION: &str = "dhp/0.2";
/// Holder name the supervisor moves an orphaned handoff to.
pub const ORPHANED_HOLDER: &str = "__orphaned__";

/// Seconds since the Unix epoch, as Python's `time.time()`.
pub fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// Python's `datetime.now(timezone.utc).isoformat()`: microseconds are
/// omitted when they are zero.
pub fn utcnow_iso() -> String {
    iso(chrono::Utc::now())
}

/// [`utcnow_iso`] of the time `t` (seconds since the epoch, microsecond
/// precision); a time out of chrono's range is shown as the epoch.
pub fn iso_of(t: f64) -> String {
    let micros = (t * 1e6).round();
    let micros = if micros.is_finite() { micros as i64 } else { 0 };
    iso(chrono::DateTime::from_timestamp_micros(micros).unwrap_or_default())
}

fn iso(t: chrono::DateTime<chrono::Utc>) -> String {
    use chrono::{Datelike, Timelike};
    let micros = t.timestamp_subsec_micros();
    let year = t.year();
    if !(0..=9999).contains(&year) || micros >= 1_000_000 {
        // Outside four-digit years (and in a leap second) chrono's own
        // formatting decides the text, as it always did.
        return if micros == 0 {
            t.format("%Y-%m-%dT%H:%M:%S+00:00").to_string()
        } else {
            t.format("%Y-%m-%dT%H:%M:%S%.6f+00:00").to_string()
        };
    }
    // Every checkpoint stamps one of these: digits pushed directly cost a
    // fraction of parsing a strftime pattern per call (issue 49, item 2).
    let mut out = String::with_capacity(32);
    let digits = |n: u32, width: u32, out: &mut String| {
        for k in (0..width).rev() {
            out.push(char::from(b'0' + (n / 10u32.pow(k) % 10) as u8));
        }
    };
    digits(year as u32, 4, &mut out);
    out.push('-');
    digits(t.month(), 2, &mut out);
    out.push('-');
    digits(t.day(), 2, &mut out);
    out.push('T');
    digits(t.hour(), 2, &mut out);
    out.push(':');
    digits(t.minute(), 2, &mut out);
    out.push(':');
    digits(t.second(), 2, &mut out);
    if micros != 0 {
        out.push('.');
        digits(micros, 6, &mut out);
    }
    out.push_str("+00:00");
    out
}

/// Validate a handoff id: exactly 64 lowercase hex characters.
pub fn check_hid(hid: &str) -> Result<&str> {
    if hid.len() == 64 && hid.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        Ok(hid)
    } else {
        Err(Error::MalformedId {
            what: "handoff_id",
            reason: format!("want 64 lowercase hex chars, got {:?}", truncate(hid, 80)),
        })
    }
}

/// Validate a worker or supervisor id: 1–128 chars of `[A-Za-z0-9_.-]`,
/// not reserved and not confusable. Reserved: anything that starts and ends
/// with `__` (the protocol's own holder names, such as `__orphaned__`).
/// Confusable: ids made only of dots (`.`, `..`), which read as paths and
/// name liveness-token files.
pub fn check_worker_id(id: &str) -> Result<&str> {
    if id.is_empty() || id.len() > 128 {
        return Err(Error::MalformedId { what: "worker_id", reason: format!("length {} not in 1..=128", id.len()) });
    }
    if !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-') {
        return Err(Error::MalformedId {
            what: "worker_id",
            reason: format!("{:?} has characters outside [A-Za-z0-9_.-]", truncate(id, 80)),
        });
    }
    if id == ORPHANED_HOLDER || (id.starts_with("__") && id.ends_with("__")) {
        return Err(Error::MalformedId {
            what: "worker_id",
            reason: format!("{id:?} is reserved (ids of the form __name__)"),
        });
    }
    if id.bytes().all(|b| b == b'.') {
        return Err(Error::MalformedId {
            what: "worker_id",
            reason: format!("{id:?} is only dots (confusable with a path)"),
        });
    }
    Ok(id)
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// Budget caps of a contract.
#[derive(Debug, Clone, PartialEq)]
pub struct Budget {
    /// Most steps (checkpoints reporting progress) the handoff may take.
    pub max_steps: i64,
    /// Most the handoff may spend, in US dollars.
    pub max_spend_usd: f64,
    /// Most wall-clock seconds from the first claim.
    pub max_wallclock_s: f64,
    /// Most claims and recoveries before the handoff is dead-lettered.
    pub max_attempts: i64,
}

impl Budget {
    /// `envelope.build` without a budget.
    pub const BUILD_DEFAULT: Budget =
        Budget { max_steps: 100, max_spend_usd: 10.0, max_wallclock_s: 3600.0, max_attempts: 3 };
    /// The SDK-level `dhp.dispatch` defaults.
    pub const SDK_DEFAULT: Budget =
        Budget { max_steps: 10000, max_spend_usd: 500.0, max_wallclock_s: 5400.0, max_attempts: 5 };

    /// The JSON object, keys in the reference's order.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("max_steps".into(), json!(self.max_steps));
        m.insert("max_spend_usd".into(), json::float(self.max_spend_usd));
        m.insert("max_wallclock_s".into(), json::float(self.max_wallclock_s));
        m.insert("max_attempts".into(), json!(self.max_attempts));
        Value::Object(m)
    }
}

/// What `envelope.build` takes besides kind, inputs and schema.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Budget object; `None` means [`Budget::BUILD_DEFAULT`]. Any JSON object
    /// is accepted so that partial or extended budgets hash as given.
    pub budget: Option<Value>,
    /// `contract.deadline` (ISO-8601); default none.
    pub deadline: Option<String>,
    /// `contract.acceptance` criteria; default an empty list.
    pub acceptance: Option<Vec<Value>>,
    /// `provenance.parent_handoff_id`: the handoff that spawned this one.
    pub parent_handoff_id: Option<String>,
    /// `provenance.trace_id`; default a random 16-hex-digit id.
    pub trace_id: Option<String>,
    /// `provenance.created_by`; default `dhp/0.1`.
    pub created_by: Option<String>,
    /// `idempotency_key`; default a random one.
    pub idempotency_key: Option<String>,
    /// `contract.max_stall_retries`; default 2.
    pub max_stall_retries: Option<i64>,
    /// `contract.capabilities`: the declared capabilities; default none.
    pub capabilities: Option<Value>,
    /// Fixed `created_at` (tests and vectors); default now.
    pub created_at: Option<String>,
}

/// Build a pending envelope exactly as `dhp.envelope.build` does.
pub fn build(kind: &str, inputs: Value, output_schema: Value, opts: BuildOptions) -> Result<Value> {
    let created_at = opts.created_at.clone().unwrap_or_else(utcnow_iso);
    let input_hash = json::sha256_hex(&json::canonical(&inputs)?);
    let mut contract = Map::new();
    contract.insert("output_schema".into(), output_schema);
    contract.insert("acceptance".into(), Value::Array(opts.acceptance.unwrap_or_default()));
    contract.insert("deadline".into(), opts.deadline.map(Value::String).unwrap_or(Value::Null));
    contract.insert("budget".into(), opts.budget.unwrap_or_else(|| Budget::BUILD_DEFAULT.to_value()));
    contract.insert("max_stall_retries".into(), json!(opts.max_stall_retries.unwrap_or(2)));
    if let Some(caps) = opts.capabilities {
        // Python: `if capabilities:` — an empty dict is left out.
        if caps.as_object().map(|m| !m.is_empty()).unwrap_or(!caps.is_null()) {
            contract.insert("capabilities".into(), caps);
        }
    }
    let trace_id = match opts.trace_id {
        Some(t) => t,
        None => json::sha256_hex(&json::canonical(&json!([kind, inputs, created_at]))?)[..16].to_string(),
    };
    let idem = match opts.idempotency_key {
        Some(k) => k,
        None => json::sha256_hex(&json::canonical(&json!([kind, inputs]))?)[..16].to_string(),
    };
    let mut env = json!({
        "version": VERSION,
        "task": {"kind": kind, "inputs": inputs, "input_hash": input_hash},
        "contract": Value::Object(contract),
        "provenance": {
            "parent_handoff_id": opts.parent_handoff_id,
            "trace_id": trace_id,
            "created_by": opts.created_by.unwrap_or_else(|| "dhp/0.1".into()),
            "created_at": created_at,
        },
        "execution": {"status": "pending", "attempt": 0, "checkpoints": [], "runner_id": null, "lease": null},
        "delivery": {"idempotency_key": idem, "outbox": {"uri": "", "ack": false}},
    });
    let hid = handoff_id(&env)?;
    env["handoff_id"] = Value::String(hid);
    Ok(env)
}

/// The immutable part of an envelope covered by its id.
pub fn spec_of(env: &Value) -> Result<Value> {
    let field = |k: &str| env.get(k).cloned().ok_or_else(|| Error::validation(format!("envelope has no {k:?}")));
    let idem = env
        .get("delivery")
        .and_then(|d| d.get("idempotency_key"))
        .cloned()
        .ok_or_else(|| Error::validation("envelope has no delivery.idempotency_key"))?;
    Ok(json!({
        "version": field("version")?,
        "task": field("task")?,
        "contract": field("contract")?,
        "provenance": field("provenance")?,
        "idempotency_key": idem,
    }))
}

/// `handoff_id = sha256_hex(canonical(spec))`.
pub fn handoff_id(env: &Value) -> Result<String> {
    Ok(json::sha256_hex(&json::canonical(&spec_of(env)?)?))
}

/// `input_hash = sha256_hex(canonical(task.inputs))`.
pub fn input_hash(inputs: &Value) -> Result<String> {
    Ok(json::sha256_hex(&json::canonical(inputs)?))
}

/// The envelope's id field matches its body.
pub fn verify_id(env: &Value) -> bool {
    match (env.get("handoff_id").and_then(Value::as_str), handoff_id(env)) {
        (Some(claimed), Ok(actual)) => claimed == actual,
        _ => false,
    }
}

/// The inputs match their bound hash (the crossed-wire check).
pub fn verify_inputs(env: &Value) -> bool {
    let Some(task) = env.get("task") else { return false };
    let inputs = task.get("inputs").cloned().unwrap_or_else(|| json!({}));
    match (task.get("input_hash").and_then(Value::as_str), input_hash(&inputs)) {
        (Some(h), Ok(actual)) => h == actual,
        _ => false,
    }
}

/// Verify identity and input binding; the typed error says which failed.
pub fn verify(env: &Value) -> Result<String> {
    if !env.is_object() {
        return Err(Error::validation("envelope must be a JSON object"));
    }
    if !verify_id(env) {
        return Err(Error::tamper("handoff_id does not match envelope body"));
    }
    if !verify_inputs(env) {
        return Err(Error::tamper("inputs do not match input_hash"));
    }
    let hid = env["handoff_id"].as_str().unwrap_or_default();
    check_hid(hid)?;
    Ok(hid.to_string())
}

/// Validate a result against the contract's `output_schema`.
pub fn validate_result(env: &Value, result: &Value) -> Result<()> {
    let hid = env.get("handoff_id").and_then(Value::as_str).unwrap_or_default().to_string();
    let schema = env
        .pointer("/contract/output_schema")
        .ok_or_else(|| Error::validation("envelope has no contract.output_schema"))?;
    // A plain schema and a valid result need no schema compiler (see the module).
    if crate::plain_schema::plainly_valid(schema, result) {
        return Ok(());
    }
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| Error::SchemaViolation { hid: hid.clone(), detail: format!("invalid output_schema: {e}") })?;
    let errors: Vec<String> = validator.iter_errors(result).map(|e| format!("{e} at {}", e.instance_path())).collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Error::SchemaViolation { hid, detail: errors.join("; ") })
    }
}

/// Read `execution.status`.
pub fn status(env: &Value) -> &str {
    env.pointer("/execution/status").and_then(Value::as_str).unwrap_or("")
}

/// Read a budget field, if present and numeric.
pub fn budget_f64(env: &Value, key: &str) -> Option<f64> {
    env.pointer("/contract/budget").and_then(|b| b.get(key)).and_then(Value::as_f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The direct formatter writes what chrono's strftime wrote: the
    /// reference's text, whole seconds without a fraction.
    #[test]
    fn iso_text_is_chronos() {
        let chrono_iso = |micros: i64| {
            let t = chrono::DateTime::from_timestamp_micros(micros).unwrap_or_default();
            if t.timestamp_subsec_micros() == 0 {
                t.format("%Y-%m-%dT%H:%M:%S+00:00").to_string()
            } else {
                t.format("%Y-%m-%dT%H:%M:%S%.6f+00:00").to_string()
            }
        };
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut cases = vec![0, 1, 999_999, 1_000_000, -1, -62_135_596_800_000_000, 253_402_300_799_999_999];
        cases.extend([-62_135_596_800_000_001, 253_402_300_800_000_000, 1_796_569_349_340_919]);
        for _ in 0..20_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            // seconds from before year 0 to after 9999, some whole
            let micros = (x >> 1) as i64 % 400_000_000_000_000_000 - 100_000_000_000_000_000;
            cases.push(if x % 5 == 0 { micros / 1_000_000 * 1_000_000 } else { micros });
        }
        for micros in cases {
            let t = chrono::DateTime::from_timestamp_micros(micros).unwrap_or_default();
            assert_eq!(iso(t), chrono_iso(micros), "{micros}");
        }
        assert_eq!(iso_of(1.5), "1970-01-01T00:00:01.500000+00:00");
        assert_eq!(iso_of(86_400.0), "1970-01-02T00:00:00+00:00");
    }

    #[test]
    fn build_verifies_and_detects_tamper() {
        let env = build("t", json!({"inline": {"n": 1}}), json!({"type": "object"}), BuildOptions::default()).unwrap();
        assert!(verify_id(&env) && verify_inputs(&env));
        let mut bad = env.clone();
        bad["task"]["inputs"]["inline"]["n"] = json!(2);
        assert!(!verify_inputs(&bad) && !verify_id(&bad));
        assert!(matches!(verify(&bad), Err(Error::Tamper { .. })));
    }

    #[test]
    fn ids_are_validated() {
        assert!(check_hid(&"a".repeat(64)).is_ok());
        assert!(check_hid(&"A".repeat(64)).is_err());
        assert!(check_hid("abc").is_err());
        assert!(check_worker_id("w-1.x_2").is_ok());
        assert!(check_worker_id("").is_err());
        assert!(check_worker_id("a b").is_err());
        assert!(check_worker_id(&"a".repeat(129)).is_err());
        for reserved in ["__orphaned__", "__x__", "____", "___", "__", ".", "..", "..."] {
            assert!(check_worker_id(reserved).is_err(), "{reserved}");
        }
        for fine in ["__x", "x__", "_w_", "w.1", "..x", "_"] {
            assert!(check_worker_id(fine).is_ok(), "{fine}");
        }
    }

    #[test]
    fn results_are_schema_checked() {
        let env = build(
            "t",
            json!({}),
            json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}),
            BuildOptions::default(),
        )
        .unwrap();
        validate_result(&env, &json!({"x": 1})).unwrap();
        assert!(matches!(validate_result(&env, &json!({"y": 1})), Err(Error::SchemaViolation { .. })));
    }
}
