//! docs/PROTOCOL.md names the assertions that check its rules: every
//! assertion of the catalogue tags at least one rule (`**[id]**`) and has
//! its row in the §14 conformance index, at its level; every tag and row
//! names an assertion that exists; and §0's count of extended assertions
//! is the catalogue's. (docs/conformance-rules.md's table is checked
//! against the catalogue by cli_surface.rs.)
use crate::common::*;
use std::collections::{BTreeMap, BTreeSet};

const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/PROTOCOL.md");

/// Ids in the rule tags: a bold span made only of `[id]` groups, which
/// may wrap across lines (`**[a] [b]\n[c]**`).
fn tags(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (at, _) in text.match_indices("**[") {
        let rest = &text[at + 3..];
        let Some(end) = rest.find("]**") else { continue };
        let groups: Vec<&str> = rest[..end].split(']').map(|g| g.trim().trim_start_matches('[')).collect();
        if groups.iter().all(|g| !g.is_empty() && !g.contains(char::is_whitespace)) {
            out.extend(groups.iter().map(|g| g.to_string()));
        }
    }
    out
}

/// `id -> level` of the §14 table.
fn index(section: &str) -> BTreeMap<String, String> {
    section
        .lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split('|').map(str::trim).collect();
            (cols.len() == 5 && cols[1] != "assertion" && !cols[1].starts_with('-'))
                .then(|| (cols[1].to_string(), cols[2].to_string()))
        })
        .collect()
}

#[test]
fn protocol_doc_tags_and_indexes_every_assertion() {
    let doc = std::fs::read_to_string(DOC).expect("docs/PROTOCOL.md");
    let (body, rest) = doc.split_once("\n## 14. Conformance index").expect("§14 of docs/PROTOCOL.md");
    let (section, _) = rest.split_once("\n## ").expect("a section after §14");
    let catalogue: BTreeMap<String, String> = catalogue("all")
        .iter()
        .map(|a| (a["id"].as_str().unwrap().to_string(), a["level"].as_str().unwrap().to_string()))
        .collect();
    assert!(catalogue.len() > 10, "{catalogue:?}");

    let tagged = tags(body);
    let untagged: Vec<&String> = catalogue.keys().filter(|id| !tagged.contains(*id)).collect();
    assert!(untagged.is_empty(), "assertions no rule of docs/PROTOCOL.md is tagged with: {untagged:?}");
    let unknown: Vec<&String> = tagged.iter().filter(|t| *t != "—" && !catalogue.contains_key(*t)).collect();
    assert!(unknown.is_empty(), "docs/PROTOCOL.md tags rules with assertions that do not exist: {unknown:?}");

    assert_eq!(index(section), catalogue, "the §14 conformance index (id → level) is not the catalogue");

    let extended = catalogue.values().filter(|l| *l == "extended").count();
    let said = format!("the extended level adds {extended} more");
    assert!(doc.contains(&said), "§0 of docs/PROTOCOL.md must say \"{said}\"");
}

#[test]
fn tags_are_read_across_lines_and_prose_is_not() {
    let t = tags("x **[a] [b-c]\n[d]** y **[—]** and **bold [not] a tag** **MUST** **[two words]**");
    assert_eq!(t, ["a", "b-c", "d", "—"].into_iter().map(String::from).collect());
}
