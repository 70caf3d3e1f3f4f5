//! Every invariant has a mutant test: each declaration
//! (`dhp_chaos::check::DESCRIPTORS`) names the mutant that proves the
//! invariant can fail, and some test of this binary runs exactly that
//! mutant (`declared_mutant` / `declared_mode` of an invariant declaring
//! the same one) and requires the invariant to catch it
//! (`declared_mutant_caught`). Read from the test sources, so it runs no
//! round: the rounds are the mutant tests themselves.
use dhp_chaos::check::DESCRIPTORS;
use std::collections::BTreeMap;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it");

/// The string arguments of every `call("…"` in `body`.
fn args_of(body: &str, call: &str) -> Vec<String> {
    let pat = format!("{call}(");
    body.match_indices(&pat)
        .filter(|(at, _)| !body[..*at].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
        .filter_map(|(at, _)| {
            let rest = body[at + pat.len()..].trim_start_matches("&r, ").trim_start();
            let rest = rest.strip_prefix('"')?;
            Some(rest[..rest.find('"')?].to_string())
        })
        .collect()
}

/// `file::test` → its body, for every `#[test]` of the binary's modules.
fn tests() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(DIR).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let file = p.file_stem().unwrap().to_string_lossy().to_string();
        for chunk in text.split("#[test]").skip(1) {
            let name = chunk.split("fn ").nth(1).and_then(|s| s.split('(').next()).unwrap_or("?").trim();
            let end = chunk.find("\n}\n").map_or(chunk.len(), |e| e + 3);
            out.insert(format!("{file}::{name}"), chunk[..end].to_string());
        }
    }
    out
}

/// What is wrong: invariants no test catches with their declared mutant,
/// and tests that claim a catch without running that mutant.
fn problems(tests: &BTreeMap<String, String>) -> Vec<String> {
    let mutant_of = |inv: &str| DESCRIPTORS.iter().find(|d| d.name == inv).map(|d| d.mutant);
    let mut out = Vec::new();
    let mut caught: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (test, body) in tests {
        let mut run = args_of(body, "declared_mutant");
        run.extend(args_of(body, "declared_mode"));
        for inv in args_of(body, "declared_mutant_caught") {
            let Some(m) = mutant_of(&inv) else {
                out.push(format!("{test}: {inv:?} is not a declared invariant"));
                continue;
            };
            if run.iter().any(|r| mutant_of(r) == Some(m)) {
                if let Some(d) = DESCRIPTORS.iter().find(|d| d.name == inv) {
                    caught.entry(d.name).or_default().push(test);
                }
            } else {
                out.push(format!("{test}: requires {inv} to catch {m}, but runs no declared_mutant of it"));
            }
        }
    }
    for d in &DESCRIPTORS {
        if !caught.contains_key(d.name) {
            out.push(format!("{}: no test runs its declared mutant ({}) and requires it caught", d.name, d.mutant));
        }
    }
    out
}

#[test]
fn every_invariant_is_caught_by_its_declared_mutant_in_a_test() {
    let p = problems(&tests());
    assert!(p.is_empty(), "{}", p.join("\n"));
}

#[test]
fn a_missing_catch_and_a_catch_without_its_mutant_are_named() {
    let mut t = tests();
    t.retain(|_, body| !body.contains("declared_mutant_caught(&r, \"result\")"));
    t.insert(
        "x::y".into(),
        "fn y() { let w = declared_mutant(\"result\"); declared_mutant_caught(&r, \"fencing\"); }".into(),
    );
    let p = problems(&t);
    assert!(p.iter().any(|m| m.starts_with("result: no test runs")), "{p:#?}");
    assert!(p.iter().any(|m| m.starts_with("x::y: requires fencing to catch")), "{p:#?}");
}
