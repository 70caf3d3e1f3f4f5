//! docs/PROTOCOL.md names the assertions that check its rules: every
//! assertion of the catalogue tags at least one rule (`**[id]**`) and has
//! its row in the §14 conformance index as the catalogue declares it
//! (level and sections); every tag and row
//! names an assertion that exists; and §0's count of extended assertions
//! is the catalogue's. Every MUST / MUST NOT / SHOULD of §1–§13 is
//! followed in its paragraph by a tag whose §14 row names that section, or
//! by `**[—]** (reason; test files)` naming tests that exist; every section
//! §14 names exists; §3.1's DDL is dhp-core's and the reference's.
//! (docs/conformance-rules.md's table is checked against the catalogue by
//! cli_surface.rs.)
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

/// The §14 rows the catalogue declares: id, level, sections.
fn declared_index() -> Vec<Vec<String>> {
    catalogue("all")
        .iter()
        .map(|a| {
            let sections: Vec<&str> = a["sections"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
            vec![a["id"].as_str().unwrap().to_string(), a["level"].as_str().unwrap().to_string(), sections.join(", ")]
        })
        .collect()
}

/// The id -> sections of the catalogue (each assertion's rule tags).
fn declared_sections() -> BTreeMap<String, BTreeSet<String>> {
    declared_index().into_iter().map(|r| (r[0].clone(), r[2].split(", ").map(String::from).collect())).collect()
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

    let have = dhp_testkit::doc_table::rows_after(section, "| assertion |").expect("§14's table");
    let wrong = dhp_testkit::doc_table::mismatches(
        "docs/PROTOCOL.md §14",
        &["assertion", "level", "sections"],
        &have,
        &declared_index(),
    );
    assert!(wrong.is_empty(), "the §14 conformance index is not the catalogue's:\n{}", wrong.join("\n"));

    let extended = catalogue.values().filter(|l| *l == "extended").count();
    let said = format!("the extended level adds {extended} more");
    assert!(doc.contains(&said), "§0 of docs/PROTOCOL.md must say \"{said}\"");
}

#[test]
fn tags_are_read_across_lines_and_prose_is_not() {
    let t = tags("x **[a] [b-c]\n[d]** y **[—]** and **bold [not] a tag** **MUST** **[two words]**");
    assert_eq!(t, ["a", "b-c", "d", "—"].into_iter().map(String::from).collect());
}

/// One block of the spec: a paragraph, a list item (with its indented
/// continuation lines) or a table row; code fences are left out.
#[derive(Debug)]
struct Block {
    /// The `## N.` / `### N.M` section it is in (`§3.1`).
    section: String,
    /// 1-based line of its first line.
    line: usize,
    text: String,
}

fn section_of(heading: &str) -> Option<String> {
    let h = heading.trim_start_matches('#').trim();
    let num: String = h.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    let num = num.trim_end_matches('.');
    (!num.is_empty()).then(|| format!("§{num}"))
}

fn blocks(doc: &str) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    let (mut section, mut fence, mut open) = (String::from("§"), false, false);
    for (i, line) in doc.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("```") {
            fence = !fence;
            open = false;
            continue;
        }
        if fence {
            continue;
        }
        if line.starts_with('#') {
            if let Some(s) = section_of(line) {
                section = s;
            }
            open = false;
            continue;
        }
        let item = t.starts_with("- ")
            || t.split_once(". ").is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        let row = t.starts_with('|');
        if t.is_empty() {
            open = false;
        } else if !open || (item && !line.starts_with("  ")) || row {
            out.push(Block { section: section.clone(), line: i + 1, text: line.to_string() });
            open = !row;
        } else if let Some(b) = out.last_mut() {
            b.text.push('\n');
            b.text.push_str(line);
        }
    }
    out
}

/// Byte offsets of the normative keywords (MUST, MUST NOT, SHOULD as
/// words) in `text`.
fn normative(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for kw in ["MUST", "SHOULD"] {
        for (at, _) in text.match_indices(kw) {
            let before = text[..at].chars().next_back();
            let after = text[at + kw.len()..].chars().next();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            if !word(before) && !word(after) {
                out.push(at);
            }
        }
    }
    out.sort();
    out
}

/// The rule tags of a block, with their offsets: `(offset, ids)`.
fn tag_spans(text: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("**[") {
        let rest = &text[at + 3..];
        let Some(end) = rest.find("]**") else { continue };
        let groups: Vec<&str> = rest[..end].split(']').map(|g| g.trim().trim_start_matches('[')).collect();
        if groups.iter().all(|g| !g.is_empty() && !g.contains(char::is_whitespace)) {
            out.push((at, groups.iter().map(|g| g.to_string()).collect()));
        }
    }
    out
}

/// Problems with the `**[—]**` tags of a block: each must be followed by
/// `(REASON; TEST, TEST…)` naming test files that exist (a bare file name
/// is in the directory of the path before it).
fn untested_dashes(text: &str, root: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for (at, ids) in tag_spans(text) {
        if ids != ["—"] {
            continue;
        }
        let rest = text[at..].trim_start_matches("**[—]**").trim_start();
        let Some(body) = rest.strip_prefix('(').and_then(|r| r.split_once(')')).map(|(b, _)| b) else {
            out.push(format!("[—] without \"(reason; test files)\": {:?}", &rest[..rest.len().min(60)]));
            continue;
        };
        let Some((reason, tests)) = body.split_once(';') else {
            out.push(format!("[—] without a reason before \";\": ({body})"));
            continue;
        };
        if reason.trim().is_empty() {
            out.push(format!("[—] with an empty reason: ({body})"));
        }
        let mut dir = std::path::PathBuf::new();
        let mut named = 0;
        for t in tests.split(',').map(|t| t.trim().trim_matches('`')) {
            if t.is_empty() {
                continue;
            }
            let p = std::path::Path::new(t);
            let full = if t.contains('/') {
                dir = p.parent().map(|d| d.to_path_buf()).unwrap_or_default();
                p.to_path_buf()
            } else {
                dir.join(p)
            };
            named += 1;
            if !root.join(&full).exists() {
                out.push(format!("[—] names a test that does not exist: {}", full.display()));
            }
        }
        if named == 0 {
            out.push(format!("[—] names no test: ({body})"));
        }
    }
    out
}

/// Whether the §14 entry `row` (`§8`, `§5.3`) covers section `s`.
fn covers(row: &str, s: &str) -> bool {
    s == row || s.strip_prefix(row).is_some_and(|rest| rest.starts_with('.'))
}

/// Every MUST / MUST NOT / SHOULD of §1–§13 is followed, in its paragraph,
/// list item or table row, by a rule tag: assertion ids that exist and
/// whose §14 row names that section, or `[—]` with a reason and the tests
/// that cover it; and every section §14 names exists.
#[test]
fn every_normative_sentence_is_tagged_and_checked() {
    let doc = std::fs::read_to_string(DOC).expect("docs/PROTOCOL.md");
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let (body, _) = doc.split_once("\n## 14. Conformance index").expect("§14");
    let catalogue: BTreeSet<String> = catalogue("all").iter().map(|a| a["id"].as_str().unwrap().to_string()).collect();
    let sections: BTreeSet<String> = doc.lines().filter(|l| l.starts_with('#')).filter_map(section_of).collect();
    // id -> the sections it declares (its §14 row, checked above)
    let rows = declared_sections();
    let mut problems = Vec::new();
    for (id, secs) in &rows {
        for s in secs {
            if !sections.contains(s) {
                problems.push(format!("the catalogue: {id} names {s}, which is not a section of docs/PROTOCOL.md"));
            }
        }
    }
    for b in blocks(body) {
        if b.section == "§0" || b.section == "§" {
            continue; // the conventions that define the keywords
        }
        let tags = tag_spans(&b.text);
        for at in normative(&b.text) {
            if !tags.iter().any(|(t, _)| *t > at) {
                let end = b.text[at..].find(['.', '\n']).map_or(b.text.len(), |e| at + e);
                problems.push(format!(
                    "docs/PROTOCOL.md:{} ({}): a normative sentence with no rule tag after it: {:?}",
                    b.line,
                    b.section,
                    &b.text[b.text[..at].rfind(['.', '\n']).map_or(0, |s| s + 1)..end].trim()
                ));
            }
        }
        for (_, ids) in &tags {
            for id in ids.iter().filter(|i| *i != "—") {
                if !catalogue.contains(id) {
                    problems.push(format!("docs/PROTOCOL.md:{}: tag [{id}] names no assertion", b.line));
                } else if !rows.get(id).is_some_and(|s| s.iter().any(|r| covers(r, &b.section))) {
                    problems.push(format!(
                        "docs/PROTOCOL.md:{}: [{id}] tags a rule of {} but its sections (catalogue, §14) are {:?}",
                        b.line,
                        b.section,
                        rows.get(id).map(|s| s.iter().cloned().collect::<Vec<_>>().join(", ")).unwrap_or_default()
                    ));
                }
            }
        }
        for p in untested_dashes(&b.text, root) {
            problems.push(format!("docs/PROTOCOL.md:{} ({}): {p}", b.line, b.section));
        }
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn the_spec_parser_finds_blocks_keywords_and_dash_tags() {
    let doc = "## 3. S\n\n### 3.1 T\n\n- a MUST b\n  c **[x]**\n- MUSTARD SHOULD\n\n| r | MUST |\n\n```\nMUST\n```\np **[—]** (why; dhp-conform/Cargo.toml, nope.rs)\n";
    let bs = blocks(doc);
    let texts: Vec<(&str, &str)> = bs.iter().map(|b| (b.section.as_str(), b.text.as_str())).collect();
    assert_eq!(
        texts,
        [
            ("§3.1", "- a MUST b\n  c **[x]**"),
            ("§3.1", "- MUSTARD SHOULD"),
            ("§3.1", "| r | MUST |"),
            ("§3.1", "p **[—]** (why; dhp-conform/Cargo.toml, nope.rs)")
        ]
    );
    assert_eq!(normative(&bs[0].text), [4]);
    assert_eq!(normative(&bs[1].text), [10]);
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    assert_eq!(untested_dashes(&bs[3].text, root), ["[—] names a test that does not exist: dhp-conform/nope.rs"]);
    assert_eq!(untested_dashes("**[—]** (dhp-conform/Cargo.toml)", root).len(), 1, "no reason");
}

/// The ```sql blocks of §3.1, in order.
fn ddl_blocks(doc: &str) -> Vec<String> {
    let (_, s31) = doc.split_once("\n### 3.1 ").expect("§3.1");
    let (s31, _) = s31.split_once("\n### ").expect("a section after §3.1");
    s31.split("```sql\n").skip(1).map(|b| b.split_once("```").expect("a closed sql block").0.to_string()).collect()
}

/// A `pub const NAME: &str = r#"…"#;` of dhp-core's ddl.rs.
fn ddl_const(src: &str, name: &str) -> String {
    let start = src.find(&format!("pub const {name}: &str = r#\"\n")).unwrap_or_else(|| panic!("{name} in ddl.rs"));
    let body = &src[start..];
    let body = &body[body.find('\n').unwrap() + 1..];
    body[..body.find("\"#;").unwrap()].to_string()
}

/// §3.1 gives the DDL that creates a store: the reference's, which is
/// dhp-core's SCHEMA_SQL, then the indexes dhp-rs adds.
#[test]
fn protocol_ddl_is_the_reference_and_dhp_core_ddl() {
    let doc = std::fs::read_to_string(DOC).expect("docs/PROTOCOL.md");
    let src = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../dhp-core/src/store/sqlite/ddl.rs"))
        .expect("ddl.rs");
    let blocks = ddl_blocks(&doc);
    assert_eq!(blocks.len(), 2, "§3.1 must hold two sql blocks: the DDL and dhp-rs's extra indexes");
    assert_eq!(blocks[0], ddl_const(&src, "SCHEMA_SQL"), "§3.1's DDL is not dhp-core's SCHEMA_SQL");
    assert_eq!(blocks[1], ddl_const(&src, "EXTRA_INDEXES_SQL"), "§3.1's extra indexes are not dhp-core's");
    let out = std::process::Command::new(python())
        .args(["-c", "import sys, dhp.store as s; sys.stdout.write(s.SCHEMA)"])
        .output()
        .expect("the reference's python");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let reference = String::from_utf8(out.stdout).unwrap();
    let reference = reference
        .trim_start_matches('\n')
        .strip_prefix("PRAGMA journal_mode=WAL;\n")
        .expect("SCHEMA starts with the WAL pragma");
    assert_eq!(blocks[0], reference, "§3.1's DDL is not the reference's store.py SCHEMA (after its PRAGMA line)");
}
