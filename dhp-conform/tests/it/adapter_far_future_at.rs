//! Found while writing the adapter fuzz target: a request whose `at`
//! barrier lies beyond what a Duration holds (`"at": 1e300`) made our
//! adapter panic in `Duration::from_secs_f64`. It now answers with a
//! ValidationError for that request id and goes on serving.

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

#[test]
fn far_future_barrier_is_a_bad_request() {
    let mut child = Command::new(crate::common::adapter_bin())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawning dhp-adapter");
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |line: &str| -> Value {
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let mut reply = String::new();
        out.read_line(&mut reply).unwrap();
        serde_json::from_str(&reply).unwrap_or_else(|e| panic!("reply {reply:?}: {e}"))
    };
    let r = ask(r#"{"id": 5, "op": "canonical", "args": {"text": "[1]"}, "at": 1e300}"#);
    assert_eq!(
        (r["id"].as_u64(), r["ok"].as_bool(), r["error"]["kind"].as_str()),
        (Some(5), Some(false), Some("ValidationError")),
        "{r}"
    );
    // Still serving, and a barrier in the past is no wait at all.
    let r = ask(r#"{"id": 6, "op": "canonical", "args": {"text": "[1]"}, "at": 1}"#);
    assert_eq!((r["id"].as_u64(), r["ok"].as_bool()), (Some(6), Some(true)), "{r}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
