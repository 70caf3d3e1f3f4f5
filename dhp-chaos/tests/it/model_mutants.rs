//! The `model` invariant (docs/chaos-model.md) catches each planted bug
//! from the store audit and the harness's own facts, with the
//! implementation's history off: every verdict below names `model`
//! VIOLATED with the rule the mutant breaks. Short seeded rounds.
use crate::common::bins::{mutant_worker, run_small};
use crate::common::*;

fn mutant_supervisor(mode: &str) -> String {
    format!("{} --mode {mode}", mutant("mutant-supervisor").display())
}

/// A small round with history off, plus `extra`.
fn off(name: &str, seed: u64, chunks: u32, extra: &[&str]) -> Run {
    let mut a = vec!["--impl-history", "off", "--failpoint-rate", "0", "--allow-unchecked", "all"];
    a.extend_from_slice(extra);
    run_small(name, seed, chunks, &a)
}

/// `model` is violated, one of its violations names `rule`.
fn assert_model(r: &Run, rule: &str) {
    let v = r.violations("model");
    assert!(v.iter().any(|m| m.contains(rule)), "[model] expected rule {rule:?} in {v:#?}\n{}", r.dump());
    assert_eq!(r.code, 1, "a violation must exit 1\n{}", r.dump());
    assert_eq!(r.totals()["invariants"]["model"]["status"], "violated", "{}", r.dump());
}

#[test]
fn supervisor_that_orphans_without_a_leadership_row() {
    let s = declared_mutant("model");
    let r = off("model-no-leader-row", 5, 60, &["--supervisors", &s, "--faults", "kill-worker=1"]);
    declared_mutant_caught(&r, "model");
    assert_model(&r, "§7.1 an orphan needs a live leader term");
}

#[test]
fn supervisor_that_takes_a_live_term_with_insert_or_replace() {
    let s = mutant_supervisor("replace-leader");
    let r = off("model-replace-leader", 5, 60, &["--supervisors", &s, "--faults", "kill-worker=1"]);
    assert_model(&r, "§7.1 a leader take needs an absent or expired term");
    // what the audit saw: the replaced rows themselves
    let db = r.out.join("round-0000/store/dhp.sqlite3");
    let n = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("SELECT count(*) FROM dhpchaos_audit WHERE tbl = 'leadership' AND op = 'REPLACE'", [], |x| {
            x.get::<_, i64>(0)
        })
        .unwrap();
    assert!(n > 0, "the audit recorded no REPLACE");
    // and one-leader reads a REPLACE as the old row of the INSERT after it
    assert!(r.violations("one-leader").iter().any(|m| m.contains("two leaders")), "{}", r.dump());
}

#[test]
fn recover_that_does_not_bump_the_fence() {
    let w = mutant_worker("recover-no-bump");
    let r = off("model-recover-no-bump", 5, 60, &["--workers", &w, "--faults", "kill-worker=1"]);
    assert_model(&r, "§5.4 recover: from the orphan tombstone, fence + 1");
}

#[test]
fn checkpoint_with_a_superseded_fence() {
    let w = mutant_worker("skip-fence");
    let r = off("model-skip-fence", 3, 100, &["--workers", &w, "--faults", "pause=1", "--fault-interval", "0.3,0.6"]);
    assert_model(&r, "§5.2");
}

#[test]
fn second_completion() {
    let w = mutant_worker("complete-twice");
    let r = off("model-complete-twice", 7, 40, &["--workers", &w, "--faults", "kill-follower=1"]);
    assert_model(&r, "§6.3 a completion is accepted once");
}

#[test]
fn handoff_that_leaves_the_dlq() {
    let s = mutant_supervisor("undlq");
    let r = run_chaos(
        "model-undlq",
        &[
            "--seed",
            "5",
            "--handoffs",
            "2",
            "--chunks",
            "60",
            "--dlq-handoffs",
            "1",
            "--dlq-max-attempts",
            "2",
            "--supervisors",
            &s,
            "--faults",
            "kill-worker=1",
            "--failpoint-rate",
            "0",
            "--impl-history",
            "off",
            "--allow-unchecked",
            "all",
        ],
    );
    assert_model(&r, "§4 a failed (DLQ) handoff never changes again");
}

/// A reference round (python workers, builtin supervisors) under
/// `--allow-known-reference-bugs` whose only faults are stops at a served
/// chunk; `mutant`: the shim's planted bug (`DHP_CHAOS_SHIM_MUTANT`).
fn reference_stopped_at_chunks(name: &str, mutant: Option<&str>) -> Run {
    let out = std::env::temp_dir().join("dhp-chaos-tests").join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let py = python().display().to_string();
    let mut cmd = std::process::Command::new(chaos_bin());
    cmd.args(["--seed", "21", "--handoffs", "2", "--dlq-handoffs", "0", "--chunks", "80", "--base", "200000"])
        .args(["--workers", "python", "--python", &py, "--allow-known-reference-bugs", "--failpoint-rate", "0"])
        .args(["--faults", "stop-at-chunk=1", "--fault-interval", "0.4,0.8", "--allow-unchecked", "all"])
        .arg("--out")
        .arg(&out)
        .arg("--quiet")
        .arg("--dhp")
        .arg(dhp_bin())
        .env_remove("DHP_CHAOS_SHIM_MUTANT");
    if let Some(m) = mutant {
        cmd.env("DHP_CHAOS_SHIM_MUTANT", m);
    }
    let o = cmd.output().expect("running dhp-chaos");
    let results = std::fs::read(out.join("results.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(serde_json::Value::Null);
    Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
        out,
        results,
    }
}

/// The stop-at-chunk faults the round recorded (the harness's own lines).
fn chunk_stops(r: &Run) -> usize {
    let h = std::fs::read_to_string(r.out.join("round-0000/harness.jsonl")).unwrap_or_default();
    h.lines().filter(|l| l.contains(r#""kind":"stop-at-chunk""#) && l.contains(r#""signal":"STOP""#)).count()
}

#[test]
fn reference_no_fence_mutant_is_a_violation_under_allowed_reference_bugs_and_the_reference_is_not() {
    let r = reference_stopped_at_chunks("model-ref-no-fence", Some("no-fence"));
    assert!(chunk_stops(&r) > 0, "no stop at a served chunk happened\n{}", r.dump());
    let v = r.violations("model");
    assert!(
        v.iter().any(|m| m.contains("§5.2") && m.contains("check-then-write (§13.2) cannot explain it")),
        "{v:#?}\n{}",
        r.dump()
    );
    assert_eq!(r.code, 1, "{}", r.dump());

    let r = reference_stopped_at_chunks("model-ref-clean", None);
    assert!(chunk_stops(&r) > 0, "no stop at a served chunk happened\n{}", r.dump());
    assert!(r.violations("model").is_empty(), "{}", r.dump());
    assert_eq!(r.totals()["invariants"]["model"]["status"], "held", "{}", r.dump());
}
