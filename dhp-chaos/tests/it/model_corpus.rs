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
