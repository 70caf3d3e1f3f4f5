//! A round whose coverage targets are missed ends HELD, NOT COVERED with
//! exit 4 (not ALL INVARIANTS HELD), `analyze` agrees, and only
//! `--allow-uncovered` turns it into exit 0 — naming what was not covered.
//! The round never sees a fault: its interval (30 s) outlasts its work. Nor
//! does its worker's lease run out on its own: 5 missed heartbeats of 2 s
//! (the rounds' 3 of 0.2 s expired under load, at a load of ~20: the worker
//! quit with LeaseLost, the handoff was orphaned and recovered, and the round
//! covered orphan-expiry/orphan-death without a fault).
use crate::common::*;

const ROUND: [&str; 20] = [
    "--lease-interval",
    "2",
    "--lease-max-missed",
    "5",
    "--seed",
    "44",
    "--handoffs",
    "1",
    "--dlq-handoffs",
    "0",
    "--chunks",
    "40",
    "--faults",
    "kill-worker=1,pause=1",
    "--fault-interval",
    "30,30",
    "--failpoint-rate",
    "0",
    "--race-rate",
    "0.5",
];

fn missed(r: &Run) -> Vec<String> {
    let c = &r.totals()["coverage"];
    c["situations"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(c["faults"].as_array().into_iter().flatten())
        .filter(|t| t["target"] == true && t["hits"] == 0 && t.get("not_applicable").is_none())
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_round_that_reached_nothing_is_not_covered_exit_4() {
    let r = run_chaos("cov-missed", &ROUND);
    assert_eq!(r.code, 4, "{}", r.dump());
    let last = r.stdout.lines().last().unwrap_or("");
    assert!(last.starts_with("dhp-chaos: HELD, NOT COVERED: "), "{last}");
    for t in ["kill-worker", "pause", "zombies", "races", "orphan-death", "orphan-expiry"] {
        assert!(last.contains(t), "{t} missing from {last}");
        assert!(missed(&r).contains(&t.to_string()), "{t}: {:?}", missed(&r));
    }
    // not applicable in this configuration: said, and not demanded
    assert!(!last.contains("dlq") && !last.contains("leader-replaced"), "{last}");
    assert!(r.stdout.contains("dlq                   n/a     --dlq-handoffs 0"), "{}", r.dump());
    assert_eq!(r.results["exit_code"], 4);
    assert_eq!(r.totals()["invariants"]["zombies"]["status"], "not-exercised", "{}", r.dump());
    let (code, out) = analyze(&r.out);
    assert_eq!(code, 4, "analyze must give the run's exit code\n{out}");
    assert!(out.contains("HELD, NOT COVERED"), "{out}");
    assert!(out.contains("schedule re-derived from the seed: 1 steps, identical byte for byte"), "{out}");
    // a schedule the seed does not give back is the harness's own error
    let h = r.out.join("round-0000/harness.jsonl");
    let text = std::fs::read_to_string(&h).unwrap();
    assert!(text.contains(r#""op":"schedule","type":"event","step":0,"interval":30.0"#), "{text}");
    std::fs::write(&h, text.replace(r#""step":0,"interval":30.0"#, r#""step":0,"interval":29.0"#)).unwrap();
    let (code, out) = analyze(&r.out);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("SCHEDULE NOT REPRODUCIBLE from the seed"), "{out}");
}

#[test]
fn allow_uncovered_accepts_what_it_names_and_only_that() {
    let mut args = ROUND.to_vec();
    args.extend(["--allow-uncovered", "pause,zombies"]);
    let r = run_chaos("cov-allow-some", &args);
    assert_eq!(r.code, 4, "{}", r.dump());
    let last = r.stdout.lines().last().unwrap_or("");
    assert!(last.contains("kill-worker") && !last.contains("pause") && !last.contains("zombies"), "{last}");

    let mut args = ROUND.to_vec();
    args.extend(["--allow-uncovered", "all"]);
    let r = run_chaos("cov-allow-all", &args);
    assert_eq!(r.code, 0, "{}", r.dump());
    let last = r.stdout.lines().last().unwrap_or("");
    assert!(last.starts_with("dhp-chaos: NO VIOLATION") && last.contains("not covered, allowed"), "{last}");
    assert!(!last.contains("ALL INVARIANTS HELD"), "{last}");

    let mut args = ROUND.to_vec();
    args.extend(["--allow-uncovered", "zombiez"]);
    let r = run_chaos("cov-allow-bad", &args);
    assert_eq!(r.code, 2, "{}", r.dump());
    assert!(r.stderr.contains("unknown coverage target \"zombiez\""), "{}", r.dump());
}
