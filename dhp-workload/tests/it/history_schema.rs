//! `history::Line` against spec/chaos/history.schema.json, both ways: what
//! the writers write the schema accepts; over every line of the chaos
//! corpus and over broken copies of the writers' lines, the schema and
//! `Line::parse` accept the same lines.

use dhp_workload::history::{Kind, Line, HARNESS};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

fn spec() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../spec/chaos/history.schema.json")
}

fn validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(spec()).expect("reading the history schema");
    jsonschema::validator_for(&serde_json::from_str(&text).expect("schema JSON")).expect("schema compiles")
}

fn obj(v: &Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

/// Lines as the writers write them: dhp's worker and supervisor, the harness.
fn written() -> Vec<Value> {
    let w = |op: &str, k: Kind, f: Value| Line::new("w1", op, k, f).to_value();
    vec![
        w("claim", Kind::Invoke, json!({"hid": "h", "holder": "w1"})),
        w("claim", Kind::Ok, json!({"hid": "h", "holder": "w1", "fence": 1})),
        w("recover", Kind::Fail, json!({"hid": "h", "holder": "w1", "error": "x", "error_kind": "StateError"})),
        w("checkpoint", Kind::Invoke, json!({"hid": "h", "holder": "w1", "fence": 1, "next_n": 4})),
        w("checkpoint", Kind::Ok, json!({"hid": "h", "holder": "w1", "fence": 1, "seq": 0, "next_n": 4})),
        w("complete", Kind::Ok, json!({"hid": "h", "holder": "w1", "fence": 1, "result": {"primes": 3}})),
        Line::new("s1", "supervise", Kind::Ok, json!({"hid": "h", "action": "orphaned", "reason": "lease-expired", "previous_holder": "w1", "previous_fence": 1, "fence": 2, "checkpoints": 3})).to_value(),
        Line::new("s1", "scan", Kind::Ok, json!({"pass": 3, "leader": true})).to_value(),
        Line::new(HARNESS, "spawn", Kind::Event, json!({"name": "w1", "role": "worker"})).to_value(),
    ]
}

#[test]
fn what_the_writers_write_the_schema_accepts_and_reads_back() {
    let v = validator();
    for line in written() {
        let errs: Vec<String> = v.iter_errors(&line).map(|e| e.to_string()).collect();
        assert!(errs.is_empty(), "the schema refuses {line}: {errs:?}");
        let parsed = Line::parse(&obj(&line)).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert_eq!(parsed.to_value(), line, "reads back");
    }
}

/// Broken copies of the writers' lines: one member removed or retyped.
fn broken() -> Vec<Value> {
    let mut out = Vec::new();
    for line in written() {
        for k in obj(&line).keys() {
            let mut l = line.clone();
            l.as_object_mut().map(|m| m.remove(k));
            out.push(l);
            for bad in [json!("x"), json!(-1), json!(1.5), json!(null), json!({}), json!(true)] {
                let mut l = line.clone();
                l[k.as_str()] = bad;
                out.push(l);
            }
        }
    }
    out.push(json!({"t": 1, "pid": 1, "process": "chaos", "op": "spawn", "type": "ok"}));
    out.push(json!({"t": 1, "pid": 1, "process": "w", "op": "claim", "type": "event", "hid": "h"}));
    out.push(json!({"t": 1, "pid": 1, "process": "w", "op": "exit", "type": "info"}));
    out.push(json!({"t": 1, "pid": 1, "process": "", "op": "x", "type": "event"}));
    out.push(json!({"t": 1, "pid": 1, "process": "s", "op": "supervise", "type": "ok", "action": "dlq"}));
    out.push(json!({"t": 1, "pid": 1, "process": "s", "op": "supervise", "type": "fail", "hid": "h"}));
    out.push(json!({"t": 1, "pid": 1, "process": "w", "op": "complete", "type": "ok", "hid": "h", "result": [1]}));
    out
}

/// Every line of the chaos corpus's histories (real rounds).
fn corpus() -> Vec<Value> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../dhp-chaos/tests/corpus");
    let mut out = Vec::new();
    for round in std::fs::read_dir(&dir).expect("the chaos corpus").flatten() {
        for name in ["history.jsonl", "harness.jsonl"] {
            let Ok(text) = std::fs::read_to_string(round.path().join(name)) else { continue };
            out.extend(text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(Value::is_object));
        }
    }
    out
}

#[test]
fn the_schema_and_the_type_accept_the_same_lines() {
    let v = validator();
    let lines = corpus();
    assert!(lines.len() > 100, "the corpus has lines ({})", lines.len());
    let (mut accepted, mut refused) = (0, 0);
    for line in lines.iter().chain(&broken()) {
        let schema = v.is_valid(line);
        let typed = Line::parse(&obj(line));
        assert_eq!(schema, typed.is_ok(), "schema {schema}, type {typed:?}: {line}");
        if schema {
            accepted += 1;
        } else {
            refused += 1;
        }
    }
    assert!(accepted > 100 && refused > 50, "both sides exercised: {accepted} accepted, {refused} refused");
}
