//! `--census`, `--budget`, `--max-attempts` and `--max-stall-retries`
//! refuse nonsense with a typed usage error and create no handoff (issue
//! 11, item 10): no negative `max_steps`, no wrapping counter, no
//! `"lots"` of steps.
use crate::cli_support::*;
use crate::common;

#[test]
fn nonsense_specs_and_budgets_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (root, _) = store_with_census(dir.path());
    let r = root.to_str().unwrap();
    let before = common::dump(&root);
    let kind = ["--kind", "k", "--schema", "{}"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--census", "0,18446744073709551615,2"], "HI"),
        (vec!["--census", "0,100,0"], "CHUNK"),
        (vec!["--census", "100,100,1"], "LO < HI"),
        (vec!["--census=-1,100,1"], "LO"),
        (vec!["--census", "0,100"], "LO,HI,CHUNK"),
        (vec!["--census", "0,100,10", "--max-attempts=-1"], "max_attempts"),
        (vec!["--census", "0,100,10", "--max-attempts", "0"], "max_attempts"),
        ([&kind[..], &["--budget", r#"{"max_steps":"lots"}"#]].concat(), "max_steps"),
        ([&kind[..], &["--budget", r#"{"max_steps":-1}"#]].concat(), "max_steps"),
        ([&kind[..], &["--budget", r#"{"max_steps":18446744073709551615}"#]].concat(), "max_steps"),
        ([&kind[..], &["--budget", r#"{"max_wallclock_s":1e300}"#]].concat(), "max_wallclock_s"),
        ([&kind[..], &["--budget", r#"{"max_spend_usd":-5}"#]].concat(), "max_spend_usd"),
        ([&kind[..], &["--budget", r#"{"max_setps":5}"#]].concat(), "unknown budget key"),
        ([&kind[..], &["--budget=-1"]].concat(), "object"),
        ([&kind[..], &["--max-stall-retries=-1"]].concat(), "max_stall_retries"),
    ];
    for (extra, want) in cases {
        let args = [&["dispatch", r][..], &extra[..]].concat();
        let msg = failed(&run(&args, &[]), 2, "UsageError");
        assert!(msg.contains(want), "{extra:?}: {msg}");
        assert_eq!(before, common::dump(&root), "{extra:?} changed the store");
    }
    // The largest census still fits every counter: max_steps is positive.
    let ok = run(&["--json", "dispatch", r, "--census", "0,10000000000,10000000"], &[]);
    assert_eq!(ok.code, 0, "{ok:?}");
    let hid = ok.json()["hid"].as_str().unwrap().to_string();
    let c = rusqlite::Connection::open(root.join("dhp.sqlite3")).unwrap();
    let text: String = c.query_row("SELECT envelope_json FROM handoffs WHERE hid=?1", [&hid], |r| r.get(0)).unwrap();
    let env: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(env["contract"]["budget"]["max_steps"], 1100, "1000 chunks + 100: {}", env["contract"]["budget"]);
}

#[test]
fn the_worker_refuses_census_inputs_out_of_bounds() {
    use dhp_core::envelope::{self, BuildOptions};
    use dhp_workload::census;
    let dir = tempfile::tempdir().unwrap();
    let (root, _) = store_with_census(dir.path());
    let r = root.to_str().unwrap();
    // Handoffs another tool dispatched: reversed, too large, chunk too big.
    for (lo, hi, chunk, want) in
        [(2000, 1000, 100, "LO < HI"), (0, 20_000_000_000, 100, "HI"), (0, 100, 20_000_000, "CHUNK")]
    {
        let env = envelope::build(
            census::KIND,
            census::inputs(lo, hi, chunk),
            census::output_schema(),
            BuildOptions::default(),
        )
        .unwrap();
        let file = dir.path().join("env.json");
        std::fs::write(&file, serde_json::to_vec(&env).unwrap()).unwrap();
        let d = run(&["--json", "dispatch", r, "--envelope", file.to_str().unwrap()], &[]);
        assert_eq!(d.code, 0, "{d:?}");
        let hid = d.json()["hid"].as_str().unwrap().to_string();
        let msg = failed(
            &run(&["work", r, "--runner", "w1", "claim", &hid, "--no-background-heartbeat"], &[]),
            3,
            "ValidationError",
        );
        assert!(msg.contains(want), "{lo},{hi},{chunk}: {msg}");
        let c = rusqlite::Connection::open(root.join("dhp.sqlite3")).unwrap();
        let n: i64 = c.query_row("SELECT COUNT(*) FROM checkpoints WHERE hid=?1", [&hid], |r| r.get(0)).unwrap();
        assert_eq!(n, 0, "no checkpoint of a refused census");
        let st = run(&["--json", "status", r, &hid], &[]).json();
        assert_eq!(
            (st["status"].as_str(), st["owner"].as_str()),
            (Some("pending"), None),
            "refused before the claim: {st}"
        );
    }
}
