//! The shipped adapters are entry points too: malformed requests get typed
//! error replies with the request's id, unknown ops `Unsupported`,
//! malformed ids `ValidationError` — and the store is left unchanged. And
//! the runner's own command line refuses bad options.
use crate::common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

/// Feed raw lines to an adapter and collect one reply per line.
fn exchange(program: &str, args: &[&str], lines: &[String]) -> Vec<Value> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawning the adapter");
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut replies = Vec::new();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
        stdin.flush().unwrap();
        let mut reply = String::new();
        out.read_line(&mut reply).unwrap();
        replies.push(serde_json::from_str(&reply).unwrap_or_else(|e| panic!("{program}: reply {reply:?}: {e}")));
    }
    drop(stdin);
    assert!(child.wait().unwrap().success(), "{program} exits cleanly at EOF");
    replies
}

fn check(program: &str, args: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store").to_string_lossy().into_owned();
    let build = json!({"id": 3, "op": "build_envelope", "args": {"kind": "t", "inputs": {"inline": {"n": 1}}, "output_schema": {"type": "object"}}});
    let first = exchange(
        program,
        args,
        &[json!({"id": 1, "op": "open", "args": {"root": root}}).to_string(), build.to_string()],
    );
    let env = first[1]["result"]["envelope"].clone();
    let hid = env["handoff_id"].as_str().unwrap().to_string();
    let lines = vec![
        "this is not json".to_string(),
        json!({"id": 2, "op": "teleport", "args": {}}).to_string(),
        json!({"id": 3, "op": "claim", "args": {"root": root}}).to_string(),
        json!({"id": 4, "op": "dispatch", "args": {"root": root, "envelope": env}}).to_string(),
        json!({"id": 5, "op": "claim", "args": {"root": root, "worker": "w 1", "hid": hid}}).to_string(),
        json!({"id": 6, "op": "claim", "args": {"root": root, "worker": "w1", "hid": hid.to_uppercase()}}).to_string(),
        json!({"id": 7, "op": "checkpoint", "args": {"root": root, "worker": "w1", "hid": hid, "fence": "zero", "state": {}}}).to_string(),
        json!({"id": 8, "op": "status", "args": {"root": root, "hid": hid}}).to_string(),
    ];
    let r = exchange(program, args, &lines);
    let kind = |i: usize| r[i]["error"]["kind"].as_str().unwrap_or("(ok)").to_string();
    assert_eq!((r[0]["ok"].clone(), kind(0)), (json!(false), "BadRequest".into()), "{program}: {}", r[0]);
    assert_eq!((r[1]["id"].clone(), kind(1)), (json!(2), "Unsupported".into()), "{program}: {}", r[1]);
    assert_eq!((r[2]["id"].clone(), kind(2)), (json!(3), "BadRequest".into()), "{program}: {}", r[2]);
    assert_eq!(r[3]["ok"], json!(true), "{program}: {}", r[3]);
    assert_eq!(kind(4), "ValidationError", "{program}: {}", r[4]);
    assert_eq!(kind(5), "ValidationError", "{program}: {}", r[5]);
    assert_eq!(kind(6), "BadRequest", "{program}: {}", r[6]);
    let st = &r[7]["result"];
    assert_eq!(
        (st["status"].clone(), st["owner"].clone(), st["checkpoints"].clone()),
        (json!("pending"), Value::Null, json!(0)),
        "{program}: store changed: {st}"
    );
    for (i, reply) in r.iter().enumerate() {
        let op = serde_json::from_str::<Value>(&lines[i]).ok().and_then(|v| v["op"].as_str().map(String::from));
        dhp_conform::protocol::validate_reply(op.as_deref().unwrap_or("hello"), reply)
            .unwrap_or_else(|e| panic!("{program}: reply {i} violates the schema: {e}"));
    }
}

#[test]
fn our_adapter_refuses_malformed_requests() {
    check(crate::common::adapter_bin(), &[]);
}

#[test]
fn reference_adapter_refuses_malformed_requests() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../adapters/reference/python_ref.py");
    check(&python(), &[script]);
}

#[test]
fn runner_refuses_bad_options() {
    for args in [&["--timeout", "0"][..], &["--timeout", "soon"], &["--level", "everything"], &["--no-such-flag"]] {
        let run = conform(args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
    }
    let run = conform(&["no-crossed", "--junit", "/nonexistent-dir/report.xml"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("/nonexistent-dir/report.xml"), "{}", run.stderr);
}
