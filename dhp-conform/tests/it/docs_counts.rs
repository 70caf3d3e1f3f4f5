//! The counts the documents state are the program's: the assertions per
//! level in README.md and dhp-conform/README.md are `dhp-conform --list`'s
//! (docs/PROTOCOL.md §0's extended count is checked by
//! protocol_doc_index.rs), the mutants dhp-conform/README.md counts are
//! `dhp-mutant-adapter --list-mutants`', and README.md's crate table has a
//! row for every workspace member and none for anything else.
use crate::common::*;
use std::collections::{BTreeMap, BTreeSet};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn read(rel: &str) -> String {
    std::fs::read_to_string(format!("{ROOT}/{rel}")).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// `text` with its line breaks and runs of spaces made single spaces.
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The number written just before `after` in `text` (`"46 assertions"`), if any.
fn number_before(text: &str, after: &str) -> Option<u64> {
    let at = text.find(after)?;
    let head = text[..at].trim_end();
    let digits: String = head.chars().rev().take_while(char::is_ascii_digit).collect();
    digits.chars().rev().collect::<String>().parse().ok()
}

fn per_level() -> BTreeMap<String, u64> {
    let mut n = BTreeMap::new();
    for a in catalogue("all") {
        *n.entry(a["level"].as_str().unwrap().to_string()).or_insert(0) += 1;
    }
    n
}

fn word(n: u64) -> &'static str {
    ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
        .get(n as usize)
        .copied()
        .unwrap_or("?")
}

#[test]
fn the_assertion_counts_in_the_readmes_are_the_catalogues() {
    let n = per_level();
    let (core, extended, cross) = (n["core"], n["extended"], n["cross"]);
    let total = core + extended + cross;

    let readme = flat(&read("README.md"));
    let said = format!("It has {total} assertions: core {core}, extended {extended}, cross {cross}");
    assert!(readme.contains(&said), "README.md must say \"{said}\"");
    assert!(readme.contains(&format!("the reference's {} assertions", word(core))), "README.md: core count");

    let conform = flat(&read("dhp-conform/README.md"));
    assert!(
        conform.contains(&format!("**core** — the reference's {} assertions", word(core))),
        "dhp-conform/README.md: the core level's count"
    );
    let ext = number_before(&conform, "more (leases").expect("dhp-conform/README.md: \"**extended** — N more\"");
    assert_eq!(ext, extended, "dhp-conform/README.md's extended count");
    let protocol = flat(&read("docs/PROTOCOL.md"));
    assert!(protocol.contains(&format!("the {} core assertions", word(core))), "docs/PROTOCOL.md: core count");
}

#[test]
fn the_mutant_count_in_the_readme_is_the_mutant_adapters() {
    let out = std::process::Command::new(mutant_adapter_bin()).arg("--list-mutants").output().unwrap();
    assert!(out.status.success());
    let listed = String::from_utf8(out.stdout).unwrap().lines().filter(|l| !l.trim().is_empty()).count() as u64;
    let conform = flat(&read("dhp-conform/README.md"));
    let said = number_before(&conform, "mutants of dhp-core and its adapter")
        .expect("dhp-conform/README.md: \"the N mutants of dhp-core and its adapter\"");
    assert_eq!(said, listed, "dhp-conform/README.md's mutant count vs --list-mutants");
}

#[test]
fn the_crate_table_is_the_workspace() {
    let cargo = read("Cargo.toml");
    let members_line = cargo.lines().find(|l| l.trim_start().starts_with("members")).expect("workspace members");
    let members: BTreeSet<String> =
        members_line.split('"').skip(1).step_by(2).map(|m| m.trim_end_matches('/').to_string()).collect();
    assert!(members.len() > 5, "{members:?}");

    let readme = read("README.md");
    let (_, rest) = readme.split_once("\n## The crates").expect("README.md's crate table");
    let section = rest.split("\n## ").next().unwrap();
    let rows: BTreeSet<String> = section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once("/` |"))
        .map(|(name, _)| name.to_string())
        .collect();
    assert_eq!(rows, members, "README.md's crate table (left) vs the workspace members (right)");
}
