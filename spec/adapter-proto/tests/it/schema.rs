//! The types against spec/adapter/*.schema.json, both ways: every op of
//! the schema has a variant and every variant an op of the schema; every
//! sample message is accepted by the schema and reads back equal; a
//! member the schema requires is required by the type; a member the
//! schema does not know is refused by both; the schema's examples parse.

use crate::samples;
use dhp_adapter_proto::{feature, Op, ReplyLine, Request, RequestLine, Response, REPLY_SCHEMA, REQUEST_SCHEMA};
use serde_json::{json, Value};
use std::collections::BTreeSet;

fn schema(text: &str) -> Value {
    serde_json::from_str(text).expect("schema is JSON")
}

fn request_validator() -> jsonschema::Validator {
    jsonschema::validator_for(&schema(REQUEST_SCHEMA)).expect("request schema compiles")
}

fn reply_validators() -> jsonschema::ValidatorMap {
    jsonschema::validator_map_for(&schema(REPLY_SCHEMA)).expect("reply schema compiles")
}

fn result_accepted(map: &jsonschema::ValidatorMap, op: Op, result: &Value) -> bool {
    map.get(&format!("#/$defs/{op}")).expect("a result schema per op").is_valid(result)
}

fn names(v: &Value) -> Vec<String> {
    v.as_array().expect("an array").iter().map(|x| x.as_str().expect("a string").to_string()).collect()
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default()
}

fn line(request: Request) -> Value {
    RequestLine { id: 7, request, at: None, clock_offset_s: None }.to_value()
}

#[test]
fn the_schemas_ops_are_the_types_ops() {
    let req = schema(REQUEST_SCHEMA);
    let rep = schema(REPLY_SCHEMA);
    let ops: Vec<&str> = Op::ALL.iter().map(|o| o.as_str()).collect();
    assert_eq!(names(&req["properties"]["op"]["enum"]), ops);
    assert_eq!(req["allOf"].as_array().map(Vec::len), Some(ops.len()), "one args branch per op");
    for op in Op::ALL {
        assert!(req["$defs"].get(op.as_str()).is_some(), "request args schema for {op}");
        assert!(rep["$defs"].get(op.as_str()).is_some(), "reply result schema for {op}");
        assert_eq!(Op::from_name(op.as_str()), Some(*op));
    }
    assert_eq!(names(&rep["$defs"]["hello"]["properties"]["features"]["items"]["enum"]), feature::ALL);
}

#[test]
fn every_request_is_accepted_by_the_schema_and_reads_back() {
    let v = request_validator();
    let req = schema(REQUEST_SCHEMA);
    for op in Op::ALL {
        let sample = samples::request(*op);
        assert_eq!(sample.op(), *op);
        let full = RequestLine { id: 9, request: sample.clone(), at: Some(1.5), clock_offset_s: Some(2.0) };
        let wire = full.to_value();
        let errs: Vec<String> = v.iter_errors(&wire).map(|e| e.to_string()).collect();
        assert!(errs.is_empty(), "{op}: the schema refuses {wire}: {errs:?}");
        assert_eq!(RequestLine::parse(&wire).as_ref(), Ok(&full), "{op} reads back");
        // every member the schema knows is a member of the type, and no other
        let props = keys(&req["$defs"][op.as_str()]["properties"]);
        assert_eq!(keys(&wire["args"]), props, "{op}: the type's members (left) vs the schema's (right)");
    }
}

#[test]
fn a_member_the_schema_requires_the_type_requires() {
    let v = request_validator();
    let req = schema(REQUEST_SCHEMA);
    for op in Op::ALL {
        let wire = line(samples::request(*op));
        for key in names(&req["$defs"][op.as_str()]["required"]) {
            let mut bad = wire.clone();
            bad["args"].as_object_mut().map(|a| a.remove(&key));
            assert!(!v.is_valid(&bad), "{op}: the schema takes args without {key}");
            assert!(RequestLine::parse(&bad).is_err(), "{op}: the type takes args without {key}");
        }
        let mut extra = wire.clone();
        extra["args"]["surplus"] = json!(1);
        assert!(!v.is_valid(&extra), "{op}: the schema takes an unknown arg");
        assert!(RequestLine::parse(&extra).is_err(), "{op}: the type takes an unknown arg");
    }
}

#[test]
fn malformed_request_lines_are_refused_by_both() {
    let v = request_validator();
    let good = line(samples::request(Op::Claim));
    let mut cases = Vec::new();
    for (key, value) in [("id", json!(-1)), ("id", json!("1")), ("op", json!("teleport")), ("args", json!([]))] {
        let mut bad = good.clone();
        bad[key] = value;
        cases.push(bad);
    }
    let mut no_args = good.clone();
    no_args.as_object_mut().map(|o| o.remove("args"));
    cases.push(no_args);
    let mut extra = good.clone();
    extra["deadline"] = json!(1);
    cases.push(extra);
    let mut fence = good.clone();
    fence["args"]["worker"] = json!(5);
    cases.push(fence);
    cases.push(json!({"id": 1, "op": "claim", "args": {}, "at": "soon"}));
    for bad in cases {
        assert!(!v.is_valid(&bad), "the schema takes {bad}");
        assert!(RequestLine::parse(&bad).is_err(), "the type takes {bad}");
    }
    assert!(matches!(
        RequestLine::parse(&json!({"id": 1, "op": "teleport", "args": {}})),
        Err(dhp_adapter_proto::ProtoError::UnknownOp(_))
    ));
}

#[test]
fn every_result_is_accepted_by_the_schema_and_reads_back() {
    let map = reply_validators();
    let rep = schema(REPLY_SCHEMA);
    for op in Op::ALL {
        let sample = samples::response(*op);
        assert_eq!(sample.op(), *op);
        let result = sample.result();
        assert!(result_accepted(&map, *op, &result), "{op}: the schema refuses {result}");
        assert_eq!(Response::from_result(*op, result.clone()).as_ref(), Ok(&sample), "{op} reads back");
        let props = keys(&rep["$defs"][op.as_str()]["properties"]);
        assert_eq!(keys(&result), props, "{op}: the type's members (left) vs the schema's (right)");
        for key in names(&rep["$defs"][op.as_str()]["required"]) {
            let mut bad = result.clone();
            bad.as_object_mut().map(|r| r.remove(&key));
            assert!(!result_accepted(&map, *op, &bad), "{op}: the schema takes a result without {key}");
            assert!(Response::from_result(*op, bad).is_err(), "{op}: the type takes a result without {key}");
        }
    }
}

#[test]
fn reply_lines_both_ways() {
    let map = reply_validators();
    let root = map.get("#").expect("root");
    let ok = ReplyLine { id: 3, outcome: Ok(json!({"fence": 1}).as_object().cloned().unwrap_or_default()) };
    let err = ReplyLine {
        id: 3,
        outcome: Err(dhp_adapter_proto::ErrorBody { kind: "StateError".into(), message: "x".into() }),
    };
    for r in [ok, err] {
        let wire = r.to_value();
        assert!(root.is_valid(&wire), "the schema refuses {wire}");
        assert_eq!(ReplyLine::parse(&wire), Ok(r));
    }
    for bad in [
        json!({"id": 3, "ok": true}),
        json!({"id": 3, "ok": true, "result": 5}),
        json!({"id": 3, "ok": false, "error": {"kind": ""}}),
        json!({"id": 3, "ok": false, "error": {"kind": "", "message": "m"}}),
        json!({"id": 3, "ok": false, "error": {"kind": "K", "message": "m", "more": 1}}),
        json!({"ok": true, "result": {}}),
        json!({"id": -3, "ok": true, "result": {}}),
        json!({"id": 3, "ok": "yes", "result": {}}),
        json!({"id": 3, "ok": true, "result": {}, "error": {"kind": "K", "message": "m"}}),
        json!([1]),
    ] {
        assert!(!root.is_valid(&bad), "the schema takes {bad}");
        assert!(ReplyLine::parse(&bad).is_err(), "the type takes {bad}");
    }
}

#[test]
fn the_schemas_examples_parse() {
    let req = schema(REQUEST_SCHEMA);
    let v = request_validator();
    let examples = req["examples"].as_array().cloned().unwrap_or_default();
    assert!(examples.len() >= 3, "the request schema has examples");
    for ex in &examples {
        assert!(v.is_valid(ex), "the schema refuses its example {ex}");
        let parsed = RequestLine::parse(ex).unwrap_or_else(|e| panic!("example {ex}: {e}"));
        assert_eq!(&parsed.to_value(), ex, "example reads back");
    }
    let rep = schema(REPLY_SCHEMA);
    let map = reply_validators();
    let lines = rep["examples"].as_array().cloned().unwrap_or_default();
    assert!(lines.len() >= 2, "the reply schema has examples");
    for ex in &lines {
        assert!(map.get("#").expect("root").is_valid(ex), "the schema refuses its example {ex}");
        assert_eq!(ReplyLine::parse(ex).map(|r| r.to_value()).as_ref(), Ok(ex));
    }
    let mut n = 0;
    for op in Op::ALL {
        for ex in rep["$defs"][op.as_str()]["examples"].as_array().into_iter().flatten() {
            n += 1;
            assert!(result_accepted(&map, *op, ex), "{op}: the schema refuses its example {ex}");
            Response::from_result(*op, ex.clone()).unwrap_or_else(|e| panic!("{op} example {ex}: {e}"));
        }
    }
    assert!(n >= 3, "result examples");
}
