//! Real chaos rounds (`dhp-chaos --seed 777 --handoffs 2 --chunks 60`,
//! builtin and reference processes): their store audits, with the
//! harness's facts (deaths, chunks served), hids shortened and checkpoint
//! state texts dropped. Both are legal for the judge under both variants,
//! and each planted illegal step — written into a real stream the way the
//! bug would have written it — is reported with its rule.

use dhp_model::judge::{Change, Fact, Judge, Params, Report, RowOp, Table, Variant};
use serde_json::{json, Value};

fn load(name: &str) -> (Vec<Change>, Vec<Fact>) {
    let path = format!("{}/tests/it/rounds/{name}.jsonl", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let (mut changes, mut facts) = (Vec::new(), Vec::new());
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).expect("a JSON line");
        if v.get("fact").is_some() {
            facts.push(serde_json::from_value(v).expect("a fact"));
        } else {
            changes.push(serde_json::from_value(v).expect("a change"));
        }
    }
    (changes, facts)
}

fn judge(v: Variant, changes: Vec<Change>, facts: Vec<Fact>) -> Report {
    let n = changes.len();
    let r = Judge::new(v, Params::default()).run(changes, facts);
    assert!(r.all_judged() && r.consumed == n, "every change judged: {r:?}");
    r
}

fn rules(r: &Report) -> Vec<&str> {
    r.violations.iter().map(|v| v.rule.as_str()).collect()
}

const ROUNDS: [&str; 2] = ["builtin-seed777", "reference-seed777"];

#[test]
fn real_rounds_are_legal() {
    for name in ROUNDS {
        for v in [Variant::Strict, Variant::CheckThenWrite] {
            let (c, f) = load(name);
            let r = judge(v, c, f);
            assert!(r.violations.is_empty() && r.excused.is_empty(), "{name} {v:?}: {:#?}", r.violations);
            assert_eq!((r.legal, r.indeterminate), (r.consumed, 0), "{name} {v:?}");
            println!("{name} {v:?}: {} changes, all legal; undecidable: {:?}", r.consumed, r.undecidable);
        }
    }
}

#[test]
fn a_supervisor_that_never_writes_its_leadership_row_but_orphans() {
    for name in ROUNDS {
        let (mut c, f) = load(name);
        c.retain(|x| x.table != Table::Leadership);
        let r = judge(Variant::Strict, c, f);
        assert!(rules(&r).contains(&"§7.1 an orphan needs a live leader term [leader-election]"), "{name}: {r:#?}");
    }
}

/// The first change of `table` matching `pick`, its index.
fn find(c: &[Change], table: Table, pick: impl Fn(&Change) -> bool) -> usize {
    c.iter().position(|x| x.table == table && pick(x)).expect("such a change in the round")
}

#[test]
fn a_leader_take_by_insert_or_replace_inside_a_live_term() {
    for name in ROUNDS {
        let (mut c, f) = load(name);
        // After some renewal, another supervisor replaces the live row.
        let i = find(&c, Table::Leadership, |x| x.op == RowOp::Update);
        let (old, at) = (c[i].new.clone(), c[i].at + 0.01);
        let mk = |op, old: Option<Value>, new: Option<Value>| Change {
            seq: c[i].seq,
            table: Table::Leadership,
            op,
            hid: None,
            old,
            new,
            at,
            txn: None,
            began_at: None,
        };
        let take = json!({"id": 1, "holder": "sup-js", "expires_at": at + 5.0, "updated_at": at});
        let (rep, ins) = (mk(RowOp::Replace, old, None), mk(RowOp::Insert, None, Some(take)));
        c.splice(i + 1..i + 1, [rep, ins]);
        let r = judge(Variant::Strict, c, f);
        assert!(
            rules(&r).contains(&"§7.1 a leader take needs an absent or expired term [leader-election]"),
            "{name}: {r:#?}"
        );
    }
}

#[test]
fn a_recover_that_does_not_bump_the_fence_by_one() {
    for name in ROUNDS {
        let (mut c, f) = load(name);
        let i = find(&c, Table::Ownership, |x| x.old.as_ref().is_some_and(|o| o["holder"] == "__orphaned__"));
        let new = c[i].new.as_mut().expect("a new row");
        new["fence"] = json!(new["fence"].as_i64().expect("a fence") + 1);
        let r = judge(Variant::CheckThenWrite, c, f);
        assert!(rules(&r).iter().any(|x| x.starts_with("§5.4 recover")), "{name}: {r:#?}");
    }
}

#[test]
fn a_checkpoint_committed_after_its_fence_was_superseded() {
    for name in ROUNDS {
        let (mut c, f) = load(name);
        // The orphaned holder's next checkpoint lands right after the orphan, before the recover.
        let i = find(&c, Table::Ownership, |x| x.new.as_ref().is_some_and(|n| n["holder"] == "__orphaned__"));
        let hid = c[i].hid.clone();
        let j = find(&c, Table::Checkpoints, |x| x.hid == hid && x.seq > c[i].seq);
        let mut late = c[j].clone();
        late.at = c[i].at + 0.001;
        c.remove(j);
        c.insert(i + 2, late); // after the orphan's two rows
        let r = judge(Variant::Strict, c, f);
        assert!(
            rules(&r).contains(&"§5.2 a checkpoint needs the current holder, fence and a live lease [fencing]"),
            "{name}: {r:#?}"
        );
    }
}

#[test]
fn a_second_completion() {
    for name in ROUNDS {
        let (mut c, f) = load(name);
        let i = find(&c, Table::Handoffs, |x| x.new.as_ref().is_some_and(|n| n["status"] == "completed"));
        let mut again = c[i].clone();
        again.old = again.new.clone();
        let n = again.new.as_mut().expect("a new row");
        n["execution"]["completed_at"] = json!("2030-01-01T00:00:00+00:00");
        again.at = c.last().expect("changes").at + 0.1;
        c.push(again);
        let r = judge(Variant::CheckThenWrite, c, f);
        assert_eq!(rules(&r), vec!["§6.3 a completion is accepted once [idempotent-complete]"], "{name}: {r:#?}");
    }
}
