//! docs/PROTOCOL.md §17 lists the points the protocol leaves to the
//! implementation. Each row names the file whose code accepts every
//! reading (marked `impl-defined: <id>`), or says no tool sends the case;
//! every marker in dhp-conform's code is a row; every passage it cites
//! is a section of the document.
use std::collections::BTreeSet;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn read(rel: &str) -> String {
    std::fs::read_to_string(format!("{ROOT}/{rel}")).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Source text with comment leaders dropped and whitespace made single
/// spaces, so a marker may wrap across comment lines.
fn flat_source(text: &str) -> String {
    text.replace("//!", " ").replace("///", " ").replace("//", " ").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The rows of §17's table: (id, passage, accepts, where).
fn rows(doc: &str) -> Vec<[String; 4]> {
    let sec = doc.split("\n## 17. Implementation-defined points").nth(1).expect("PROTOCOL.md has §17");
    sec.lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| id ") && !l.starts_with("|---"))
        .map(|l| {
            let cells: Vec<String> = l.trim_matches('|').split(" | ").map(|c| c.trim().to_string()).collect();
            assert_eq!(cells.len(), 5, "a §17 row has 5 cells: {l}");
            [cells[0].clone(), cells[1].clone(), cells[3].clone(), cells[4].clone()]
        })
        .collect()
}

fn sources(dir: &str, out: &mut Vec<(String, String)>) {
    for e in std::fs::read_dir(format!("{ROOT}/{dir}")).unwrap().flatten() {
        let rel = format!("{dir}/{}", e.file_name().to_string_lossy());
        if e.path().is_dir() {
            sources(&rel, out);
        } else if rel.ends_with(".rs") {
            out.push((rel.clone(), read(&rel)));
        }
    }
}

#[test]
fn every_implementation_defined_point_is_accepted_where_it_says() {
    let doc = read("docs/PROTOCOL.md");
    let rows = rows(&doc);
    assert!(rows.len() >= 10, "§17 lists {} points", rows.len());
    let mut ids = BTreeSet::new();
    for [id, passage, accepts, place] in &rows {
        assert!(ids.insert(id.clone()), "§17 lists {id} twice");
        for sec in passage.split(", ").filter_map(|p| p.strip_prefix('§')) {
            let (h2, h3) = (format!("\n## {sec}. "), format!("\n### {sec} "));
            assert!(doc.contains(&h2) || doc.contains(&h3), "{id}: PROTOCOL.md has no section §{sec}");
        }
        if place == "—" {
            assert!(
                accepts.starts_with("not generated") || accepts.starts_with("any"),
                "{id}: no file accepts it, so it must say no tool sends it or that any reading passes: {accepts}"
            );
            continue;
        }
        let text = flat_source(&read(place));
        assert!(text.contains(&format!("impl-defined: {id}")), "{id}: {place} has no `impl-defined: {id}` marker");
    }
    let mut files = Vec::new();
    sources("dhp-conform/src", &mut files);
    for (rel, text) in files {
        let flat = flat_source(&text);
        for (at, _) in flat.match_indices("impl-defined: ") {
            let id: String = flat[at + 14..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '-').collect();
            assert!(
                ids.contains(&id),
                "{rel} marks `{id}` implementation-defined, which PROTOCOL.md §17 does not list"
            );
        }
    }
}

#[test]
fn the_list_fails_for_a_point_no_tool_accepts() {
    // The check above can fail: a row naming a file without the marker.
    let doc = "x\n## 17. Implementation-defined points\n\n| id | passage | readings | accepts | where |\n|---|---|---|---|---|\n| made-up | §4 | a or b | either | dhp-conform/src/lib.rs |\n";
    let rows = rows(doc);
    assert_eq!(rows.len(), 1);
    let text = flat_source(&read(&rows[0][3]));
    assert!(!text.contains("impl-defined: made-up"));
}
