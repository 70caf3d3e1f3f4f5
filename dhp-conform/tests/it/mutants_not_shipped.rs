//! The shipped adapter (`dhp-adapter`, what `--impl ours` runs) is only the
//! real adapter: it knows no mutant, so asking it for one is a usage error.
//! The mutants live in `dhp-mutant-adapter`. dhp-conform itself holds no
//! adapter at all: the judge links no implementation.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Run `program args`, feeding `input` on stdin.
fn run(program: &str, args: &[&str], input: &str) -> Output {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {program}: {e}"));
    // a process that refuses its options exits without reading: a broken
    // pipe here is that, and its exit status says the rest
    let _ = child.stdin.take().expect("stdin").write_all(input.as_bytes());
    child.wait_with_output().expect("waiting")
}

const HELLO: &str = "{\"id\": 1, \"op\": \"hello\", \"args\": {\"adapter_protocol\": 1}}\n";

#[test]
fn shipped_adapter_refuses_mutant_options() {
    let program = crate::common::adapter_bin();
    for args in [vec!["--mutant", "no-fence-check"], vec!["--list-mutants"]] {
        let out = run(program, &args, HELLO);
        assert_eq!(out.status.code(), Some(2), "{program} {args:?} must be a usage error");
        assert!(out.stdout.is_empty(), "{program} {args:?} answered: {}", String::from_utf8_lossy(&out.stdout));
        assert!(String::from_utf8_lossy(&out.stderr).contains("usage:"), "{program} {args:?}");
    }
}

#[test]
fn conform_is_no_adapter() {
    // the old `dhp-conform __adapter` mode is gone: dhp-conform never answers
    // a hello as an implementation
    let out = run(env!("CARGO_BIN_EXE_dhp-conform"), &["__adapter"], HELLO);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("\"implementation\""), "dhp-conform answered as an adapter: {stdout}");
}

#[test]
fn adapters_answer_help() {
    for program in [crate::common::adapter_bin(), crate::common::mutant_adapter_bin()] {
        let out = run(program, &["--help"], "");
        assert_eq!(out.status.code(), Some(0), "{program} --help");
        assert!(String::from_utf8_lossy(&out.stdout).contains("usage:"), "{program} --help");
    }
}

#[test]
fn mutant_adapter_names_its_mutant() {
    let out = run(crate::common::mutant_adapter_bin(), &["--mutant", "no-fence-check"], HELLO);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let reply: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON reply");
    assert_eq!(reply["result"]["implementation"], "dhp-rs (mutant no-fence-check)");
    // and the real adapter says it is the real one
    let out = run(crate::common::adapter_bin(), &[], HELLO);
    let reply: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON reply");
    assert_eq!(reply["result"]["implementation"], "dhp-rs");
}

#[test]
fn mutant_adapter_needs_a_known_mutant() {
    let program = crate::common::mutant_adapter_bin();
    for args in [vec![], vec!["--mutant", "no-such-mutant"], vec!["--mutant"]] {
        let out = run(program, &args, HELLO);
        assert_eq!(out.status.code(), Some(2), "{args:?} must be a usage error");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
