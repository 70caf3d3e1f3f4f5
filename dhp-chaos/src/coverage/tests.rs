//! The ledger's rules on hand-made inputs.

use super::applicable::Config;
use super::*;
use crate::check::Verdict;
use serde_json::json;

fn tally(name: &str, hits: u64, target: bool, na: Option<&str>) -> Tally {
    Tally { name: name.into(), hits, target, not_applicable: na.map(String::from), source: String::new() }
}

fn cov(situations: Vec<Tally>, allowed: &[&str]) -> Coverage {
    Coverage {
        matrix: Vec::new(),
        faults: Vec::new(),
        situations,
        allowed: allowed.iter().map(|s| s.to_string()).collect(),
        schedule: None,
        steering: None,
    }
}

#[test]
fn a_held_zombies_verdict_without_a_write_attempt_is_not_exercised() {
    let held = || {
        let mut v = Verdict::new("zombies", "…");
        v.checked = 2;
        v.status = "held".into();
        v
    };
    let mut vs = vec![held()];
    demote(&mut vs, &cov(vec![tally("zombies", 0, true, None)], &[]));
    assert_eq!((vs[0].status.as_str(), vs[0].checked), ("not-exercised", 0));
    assert!(vs[0].notes[0].contains("none of which attempted a write"), "{:?}", vs[0].notes);
    let mut vs = vec![held()];
    demote(&mut vs, &cov(vec![tally("zombies", 1, true, None)], &[]));
    assert_eq!((vs[0].status.as_str(), vs[0].checked), ("held", 2));
}

#[test]
fn missed_means_an_applicable_target_never_reached_and_allow_filters_it() {
    let c = cov(
        vec![
            tally("zombies", 0, true, None),
            tally("races", 3, true, None),
            tally("dlq", 0, true, Some("--dlq-handoffs 0")),
            tally("stall", 0, false, None),
        ],
        &["races"],
    );
    assert_eq!(c.missed(), ["zombies"]);
    assert_eq!(c.uncovered(), ["zombies"]);
    let allowed = cov(c.situations.clone(), &["zombies"]);
    assert!(allowed.uncovered().is_empty());
    assert!(cov(c.situations.clone(), &["all"]).uncovered().is_empty());
}

#[test]
fn a_run_covers_what_any_round_covered() {
    let a = cov(vec![tally("zombies", 0, true, None), tally("dlq", 0, true, Some("n/a here"))], &[]);
    let b = cov(vec![tally("zombies", 2, true, None), tally("dlq", 0, true, None)], &[]);
    let m = Coverage::merge([&a, &b]);
    assert_eq!(m.situations[0].hits, 2);
    // applicable in one round: applicable in the run, and missed
    assert_eq!(m.missed(), ["dlq"]);
}

#[test]
fn unknown_allow_uncovered_names_are_refused() {
    assert!(parse_allowed(&["zombies".into(), "kill-leader".into(), "all".into()]).is_ok());
    let e = parse_allowed(&["zombiez".into()]).unwrap_err().to_string();
    assert!(e.contains("unknown coverage target \"zombiez\""), "{e}");
}

#[test]
fn cells_say_why_the_configuration_cannot_hit_them() {
    let cfg = json!({"fault_mix": [["kill-worker", 50.0], ["pause", 0.0]], "workers": {"kind": "python"},
                     "failpoint_rate": 0.2, "workload": true, "audit": true});
    let app = Config::of(&cfg);
    assert_eq!(app.cell(Moment::CheckpointBeforeAck, Column::Sigkill), None);
    assert_eq!(app.cell(Moment::Renew, Column::Sigstop).as_deref(), Some("no pause in the fault mix"));
    assert!(app.cell(Moment::Renew, Column::Failpoint).is_some_and(|w| w.contains("no failpoint armed")));
    assert!(app.cell(Moment::LeaderHandover, Column::Sigkill).is_some());
    let fired = [("kill-worker".to_string(), 3u64)].into_iter().collect();
    let f = app.fault_tallies(&fired);
    let kw = f.iter().find(|t| t.name == "kill-worker").unwrap();
    assert!(kw.target && kw.hits == 3 && kw.not_applicable.is_none());
    assert!(f.iter().find(|t| t.name == "pause").unwrap().not_applicable.is_some());
}
