//! One failure format for every path (issue 11, item 11): clap's argument
//! errors are `dhp: UsageError: …` on one line (exit 2, a JSON object with
//! `--json`), `--help`/`--version` still print and exit 0, file I/O is
//! `IoError` in every command, an empty bundle is "not a DHP bundle",
//! `decide` on an unknown or decided approval fails, `--log` is validated,
//! and no colour codes reach a redirected stderr.
use crate::cli_support::*;
use crate::common;
use dhp_core::{envelope, Config, Runner};
use serde_json::json;

#[test]
fn argument_errors_use_the_one_line_format() {
    for args in [
        vec!["--bogus"],
        vec!["status"],
        vec!["dispatch"],
        vec!["work", "r", "--runner", "w", "sideways", "h"],
        vec!["supervisor", "r", "id", "soon"],
        vec!["status", "r", "--log", "bogus"],
        vec![],
    ] {
        let msg = failed(&run(&args, &[]), 2, "UsageError");
        assert!(!msg.contains("Usage:") && !msg.is_empty(), "{args:?}: {msg}");
        let with_json = [&args[..], &["--json"]].concat();
        failed_json(&run(&with_json, &[]), 2, "UsageError");
    }
    // The missing argument is named on the one line.
    assert!(failed(&run(&["status"], &[]), 2, "UsageError").contains("<ROOT>"));
    // DHP_LOG is validated like --log.
    let msg = failed(&run(&["status", "r"], &[("DHP_LOG", "bogus")]), 2, "UsageError");
    assert!(msg.contains("DHP_LOG"), "{msg}");
    // Empty means unset (warn), and the flag wins over the variable.
    failed(&run(&["status", "r"], &[("DHP_LOG", "")]), 11, "StoreError");
    failed(&run(&["status", "r", "--log", "error"], &[("DHP_LOG", "bogus")]), 11, "StoreError");
    for args in [vec!["--help"], vec!["--version"], vec!["status", "--help"], vec!["help", "work"]] {
        let r = run(&args, &[]);
        assert_eq!((r.code, r.stderr.as_str()), (0, ""), "{args:?}: {r:?}");
        assert!(!r.stdout.is_empty());
    }
}

#[test]
fn a_missing_file_is_an_io_error_in_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let (root, hid) = store_with_census(dir.path());
    let r = root.to_str().unwrap();
    let before = common::dump(&root);
    let gone = dir.path().join("gone");
    let g = gone.to_str().unwrap();
    for args in [
        vec!["ingest", r, g],
        vec!["resume", r, g],
        vec!["dispatch", r, "--envelope", g],
        vec!["work", r, "--runner", "w1", "claim", &hid, "--history", "/nonexistent-dir/h.jsonl"],
    ] {
        let msg = failed(&run(&args, &[]), 11, "IoError");
        assert!(msg.contains("No such file"), "{args:?}: {msg}");
        assert_eq!(before, common::dump(&root), "{args:?} changed the store");
    }
}

#[test]
fn an_empty_bundle_is_not_a_bundle() {
    let dir = tempfile::tempdir().unwrap();
    let (root, _) = store_with_census(dir.path());
    let before = common::dump(&root);
    for (text, why) in [("", "empty"), ("  \n", "empty"), ("{}", "dhp_bundle"), ("[1]", "dhp_bundle"), ("{", "JSON")] {
        let b = dir.path().join("b.json");
        std::fs::write(&b, text).unwrap();
        let msg = failed(&run(&["resume", root.to_str().unwrap(), b.to_str().unwrap()], &[]), 3, "ValidationError");
        assert!(msg.contains("not a DHP bundle") && msg.contains(why) && !msg.contains("None"), "{text:?}: {msg}");
    }
    assert_eq!(before, common::dump(&root));
}

#[test]
fn decide_refuses_unknown_and_decided_approvals() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("s");
    let w = Runner::open(&root, "w1", Config::default()).unwrap();
    let env = envelope::build("t", json!({"inline": {}}), json!({}), Default::default()).unwrap();
    let hid = w.dispatch(&env).unwrap();
    let ctx = w.claim(&hid).unwrap();
    let e = ctx.request_approval("financial", &json!({"usd": 5}), 600.0).unwrap_err();
    let dhp_core::Error::ApprovalRequired { approval_id, .. } = e else { panic!("{e:?}") };
    let r = root.to_str().unwrap();

    let before = common::dump(&root);
    let msg = failed_json(&run(&["--json", "decide", r, "apr-nope", "approve"], &[]), 4, "UnknownApproval");
    assert!(msg.contains("apr-nope"), "{msg}");
    assert_eq!(before, common::dump(&root));

    let ok = run(&["--json", "decide", r, &approval_id, "deny"], &[]);
    assert_eq!((ok.code, ok.json()["status"].as_str()), (0, Some("denied")), "{ok:?}");
    let after = common::dump(&root);
    let msg = failed(&run(&["decide", r, &approval_id, "approve"], &[]), 6, "StateError");
    assert!(msg.contains("already denied"), "{msg}");
    assert_eq!(after, common::dump(&root), "a decided approval changed");
}

#[test]
fn redirected_logs_carry_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let (root, hid) = store_with_census(dir.path());
    // info-level logs of a whole worker run, stderr redirected to a pipe.
    let r = run(&["work", root.to_str().unwrap(), "--runner", "w1", "claim", &hid, "--log", "info"], &[]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("INFO"), "info logs were written: {r:?}");
    assert!(!r.stderr.contains('\x1b'), "ANSI codes in redirected stderr: {:?}", r.stderr);
}

#[test]
fn suspend_to_a_missing_directory_leaves_the_handoff_running() {
    let dir = tempfile::tempdir().unwrap();
    let (root, hid) = store_with_census(dir.path());
    let w = Runner::open(&root, "w1", Config::default()).unwrap();
    let _ctx = w.claim(&hid).unwrap();
    let before = common::dump(&root);
    let out = dir.path().join("no-such-dir").join("b.json");
    let msg = failed(&run(&["suspend", root.to_str().unwrap(), &hid, "-o", out.to_str().unwrap()], &[]), 11, "IoError");
    assert!(msg.contains("no-such-dir"), "{msg}");
    assert_eq!(before, common::dump(&root), "the handoff was suspended without a bundle");
    // A good path: the bundle is written whole, no temp file is left.
    let good = dir.path().join("b.json");
    let ok = run(&["suspend", root.to_str().unwrap(), &hid, "-o", good.to_str().unwrap()], &[]);
    assert_eq!(ok.code, 0, "{ok:?}");
    assert!(std::fs::read(&good).unwrap().starts_with(b"{"));
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains(".tmp-")), "{names:?}");
}
