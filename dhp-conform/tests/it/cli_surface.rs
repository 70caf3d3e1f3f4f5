//! The command line is the tool's own: help that says what it does and
//! hides libtest's irrelevant flags, and a catalogue of stable ids.
use crate::common::*;

#[test]
fn help_is_the_tools_own() {
    let run = conform(&["--help"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let h = &run.stdout;
    assert!(h.starts_with("Conformance runner for DHP 1.3"), "{h}");
    assert!(h.contains("Usage: dhp-conform [OPTIONS] [FILTER]"), "{h}");
    for want in [
        "--impl <CMD>",
        "--explain <ID>",
        "--list",
        "--html <DIR>",
        "--badge <DIR>",
        "--expect <FILE>",
        "EXAMPLES:",
        "dhp-conform --impl reference",
    ] {
        assert!(h.contains(want), "help lacks {want}:\n{h}");
    }
    // libtest leftovers that mean nothing for a conformance run
    for gone in ["--bench", "-Z", "No-op", "Usefull", "--nocapture", "--show-output", "--logfile", "--include-ignored"]
    {
        assert!(!h.contains(gone), "help still shows {gone}:\n{h}");
    }
}

#[test]
fn list_shows_id_level_and_rule() {
    let run = conform(&["--list"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let first = run.stdout.lines().next().unwrap();
    let cols: Vec<&str> = first.split("  ").filter(|c| !c.is_empty()).map(str::trim).collect();
    assert_eq!(cols[..2], ["no-lost-results", "core"], "{first}");
    assert!(cols[2].contains("standby recovers"), "{first}");
    assert!(!run.stdout.contains(": test"), "{}", run.stdout);
    assert!(run.stdout.lines().any(|l| l.starts_with("cross-bundle ") && l.contains(" cross ")), "{}", run.stdout);
}

#[test]
fn list_json_is_for_tools() {
    let all = catalogue("all");
    let ids: Vec<&str> = all.iter().map(|a| a["id"].as_str().unwrap()).collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
    for a in &all {
        for k in ["rule", "why", "how", "level"] {
            assert!(!a[k].as_str().unwrap_or("").is_empty(), "{k} of {a}");
        }
    }
    let fencing = all.iter().find(|a| a["id"] == "fencing").unwrap();
    assert_eq!(fencing["level"], "core");
    assert_eq!(fencing["mutants"], serde_json::json!(["no-fence-check"]));
}

#[test]
fn explain_shows_rule_why_and_how() {
    let run = conform(&["--explain", "release-to-pending"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for want in ["release-to-pending (extended)", "Rule:", "Why:", "Checked:", "release-keeps-lease"] {
        assert!(run.stdout.contains(want), "{want}:\n{}", run.stdout);
    }
    let bad = conform(&["--explain", "no-such-rule"]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("no assertion `no-such-rule`"), "{}", bad.stderr);
}

/// The rule table in the docs is the catalogue's (`--list --format
/// markdown`); a difference is named row by row.
#[test]
fn docs_table_is_the_catalogue() {
    use dhp_testkit::doc_table::{cells, mismatches, rows_after};
    let run = conform(&["--list", "--format", "markdown"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/conformance-rules.md")).unwrap();
    let header = cells(run.stdout.lines().next().unwrap());
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let want = rows_after(&run.stdout, "").expect("--list --format markdown prints a table");
    let have = rows_after(&doc, "| id | level | sections |").expect("docs/conformance-rules.md's rule table");
    let wrong = mismatches("docs/conformance-rules.md", &header, &have, &want);
    assert!(
        wrong.is_empty(),
        "{}\n(regenerate the table with `dhp-conform --list --format markdown`)",
        wrong.join("\n")
    );
    assert!(
        doc.contains(&run.stdout),
        "docs/conformance-rules.md: the table's header or layout is not the catalogue's"
    );
}
