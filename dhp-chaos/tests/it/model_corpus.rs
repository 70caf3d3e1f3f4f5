//! Re-judge the corpus of failing rounds (tests/corpus/, README.md there)
//! with the current model: each entry's `model` verdict must still be the
//! one its expect.json records — the rule and the audit seq of its first
//! violation. Planted bugs (cut from real mutant rounds) and the peer bugs
//! written as DHP audits (River #1302, Oban, LangGraph #8764).
use dhp_chaos::check::check_round;
use serde_json::Value;
use std::path::PathBuf;

fn corpus() -> Vec<(PathBuf, Value)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut v: Vec<(PathBuf, Value)> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("expect.json").exists())
        .map(|p| {
            let e = serde_json::from_slice(&std::fs::read(p.join("expect.json")).unwrap()).unwrap();
            (p, e)
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

#[test]
fn every_corpus_round_is_judged_as_recorded() {
    let entries = corpus();
    let names: Vec<String> = entries.iter().map(|(p, _)| p.file_name().unwrap().to_string_lossy().into()).collect();
    for want in ["river-1302", "oban-rescue", "langgraph-8764", "no-leader-row", "replace-leader", "undlq"] {
        assert!(names.iter().any(|n| n == want), "corpus entry {want} missing: {names:?}");
    }
    for (dir, expect) in &entries {
        let r = check_round(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let m = r.invariants.iter().find(|v| v.name == "model").expect("a model verdict");
        assert_eq!(m.status, expect["model"].as_str().unwrap(), "{}: {m:#?}", dir.display());
        let needle = format!("[{}] audit seq {}:", expect["rule"].as_str().unwrap(), expect["seq"]);
        assert!(
            m.violations.first().is_some_and(|v| v.starts_with(&needle)),
            "{}: first violation should start with {needle:?}: {:#?}",
            dir.display(),
            m.violations
        );
        assert!(m.notes.iter().any(|n| n.starts_with("judged ")), "{}: {:#?}", dir.display(), m.notes);
    }
}

/// `dhp-chaos audit install|export` on a store of one's own (written here
/// by the `dhp` program, run as a process): the export is what dhp-model's
/// judge reads, a correct run judges legal, and a take of a live leadership
/// term with `INSERT OR REPLACE` (seen as REPLACE) not.
#[test]
fn an_implementers_store_is_judged_from_the_exported_audit() {
    use dhp_model::judge::{Change, Judge, Params, Variant};
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let run = |program: &std::path::Path, args: &[&str]| {
        let o = std::process::Command::new(program).args(args).output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let dhp = crate::common::dhp_bin();
    let s = store.to_str().unwrap();
    let out = run(&dhp, &["--json", "dispatch", "--create", s, "--census", "10,30,10"]);
    let hid = serde_json::from_str::<Value>(&out).unwrap()["hid"].as_str().unwrap().to_string();
    let cli = |args: &[&str]| run(&crate::common::chaos_bin(), &[args, &[s]].concat());
    cli(&["audit", "install"]);
    // claim, two checkpoints, complete
    run(&dhp, &["work", s, "--runner", "w1", "claim", &hid, "--pace", "0"]);
    let judge = |text: &str| {
        let changes: Vec<Change> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        Judge::new(Variant::Strict, Params::default()).run(changes, Vec::new())
    };
    let r = judge(&cli(&["audit", "export"]));
    assert!(r.consumed >= 4 && r.violations.is_empty() && r.all_judged(), "{r:#?}");

    let c = rusqlite::Connection::open(store.join("dhp.sqlite3")).unwrap();
    let now = dhp_chaos::hist::now();
    let take = "INSERT OR REPLACE INTO leadership (id, holder, expires_at, updated_at) VALUES (1, ?1, ?2, ?3)";
    c.execute(take, rusqlite::params!["sup-a", now + 5.0, now]).unwrap();
    c.execute(take, rusqlite::params!["sup-b", now + 5.0, now + 0.01]).unwrap();
    let text = cli(&["audit", "export"]);
    assert!(text.contains(r#""op":"REPLACE""#), "{text}");
    let r = judge(&text);
    assert!(
        r.violations.iter().any(|v| v.rule.starts_with("§7.1 a leader take needs an absent or expired term")),
        "{r:#?}"
    );
}

/// Without the audit there is nothing to judge: `model` is UNCHECKED (it
/// needs the store audit), never held.
#[test]
fn a_round_without_its_audit_leaves_model_unchecked() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/recover-no-bump");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("store")).unwrap();
    for f in ["round.json", "harness.jsonl", "history.jsonl", "workload.jsonl"] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    let mut export: Value = serde_json::from_slice(&std::fs::read(src.join("store/export.json")).unwrap()).unwrap();
    export.as_object_mut().unwrap().remove("audit");
    std::fs::write(dir.join("store/export.json"), export.to_string()).unwrap();
    let r = check_round(dir).unwrap();
    let m = r.invariants.iter().find(|v| v.name == "model").unwrap();
    assert_eq!(m.status, "unchecked", "{m:#?}");
    assert!(m.missing.iter().any(|s| s == "store-audit"), "{m:#?}");
}
