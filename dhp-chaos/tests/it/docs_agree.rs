//! What the documents say about the process contract is what the program
//! does: the contract version in CONTRACT.md, the README and `--help` is
//! [`dhp_chaos::CONTRACT_VERSION`]; the worker and supervisor command lines
//! of `--help` have CONTRACT.md §1's arguments in its order; and neither the
//! run banner, `--help` nor a document calls the history the ground truth
//! (verdicts rest on the harness's own sources; history is detail).
use crate::common::*;
use std::process::Command;

const CONTRACT: &str = include_str!("../../CONTRACT.md");
const README: &str = include_str!("../../README.md");

fn help() -> String {
    let out = Command::new(chaos_bin()).arg("--help").output().unwrap();
    assert!(out.status.success());
    // clap may wrap: one line of single spaces
    String::from_utf8(out.stdout).unwrap().split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The numbers after each (case-insensitive) "contract version " in `text`.
fn versions(text: &str) -> Vec<u32> {
    let lower = text.to_lowercase().replace("**", "");
    lower
        .match_indices("contract version ")
        .filter_map(|(at, m)| {
            let rest = &lower[at + m.len()..];
            rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len())].parse().ok()
        })
        .collect()
}

/// The arguments of the code block after `heading` in CONTRACT.md, past `CMD...`.
fn contract_line(heading: &str) -> Vec<String> {
    let (_, rest) = CONTRACT.split_once(heading).unwrap_or_else(|| panic!("CONTRACT.md has no {heading:?}"));
    let block = rest.split("```").nth(1).expect("a code block");
    let line = block.lines().map(str::trim).find(|l| l.starts_with("CMD...")).expect("a CMD... line");
    line.split_whitespace().skip(1).map(String::from).collect()
}

/// The `…` command line after `marker` in the help text.
fn help_line(help: &str, marker: &str) -> Vec<String> {
    let (_, rest) = help.split_once(marker).unwrap_or_else(|| panic!("--help has no {marker:?}"));
    let (_, rest) = rest.split_once('`').expect("a command line in backquotes");
    rest.split('`').next().unwrap().split_whitespace().map(String::from).collect()
}

/// Placeholders and flags in order, with the contract's words for the
/// same thing (`claim|recover` is `MODE`; `SHIP...` is the `--ship` flags).
fn shape(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        match a.as_str() {
            "claim|recover" => out.push("MODE".into()),
            "SHIP..." | "--ship" => {
                out.push("SHIP".into());
                // the flag's value belongs to it
                it.next_if(|v| !v.starts_with("--"));
            }
            _ => out.push(a.clone()),
        }
    }
    out
}

#[test]
fn contract_version_is_the_same_in_the_code_the_documents_and_help() {
    let want = dhp_chaos::CONTRACT_VERSION;
    let head: String = CONTRACT.lines().take(5).collect::<Vec<_>>().join(" ");
    assert_eq!(versions(&head).first(), Some(&want), "CONTRACT.md's opening: {head}");
    let said = versions(README);
    assert!(!said.is_empty(), "dhp-chaos/README.md must name the contract version");
    // a version-1 worker may be mentioned as such, beside the current one
    assert_eq!(said.first(), Some(&want), "dhp-chaos/README.md names version {said:?} first");
    let h = help();
    assert!(versions(&h).contains(&want), "--help must name contract version {want}: {h}");
}

#[test]
fn help_gives_the_command_lines_of_contract_section_1_in_its_order() {
    let h = help();
    let worker = shape(&contract_line("### Worker (claim) and recovery worker"));
    assert_eq!(worker[0], "ROOT");
    assert_eq!(shape(&help_line(&h, "--workers <WORKERS>")), worker, "--help's worker line vs CONTRACT.md §1");
    let sup = shape(&contract_line("### Supervisor"));
    assert_eq!(shape(&help_line(&h, "--supervisors <SUPERVISORS>")), sup, "--help's supervisor line vs CONTRACT.md §1");
}

#[test]
fn history_is_called_detail_not_the_ground_truth() {
    let mut texts = vec![
        ("--help".to_string(), help()),
        ("README.md".into(), README.into()),
        ("CONTRACT.md".into(), CONTRACT.into()),
    ];
    // the README's moved sections
    let pages = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/chaos");
    for e in std::fs::read_dir(&pages).unwrap_or_else(|e| panic!("{}: {e}", pages.display())) {
        let p = e.unwrap().path();
        texts.push((p.display().to_string(), std::fs::read_to_string(&p).unwrap()));
    }
    assert!(texts.len() > 3, "no pages in docs/chaos");
    for (what, text) in texts {
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
        assert!(!flat.contains("ground truth"), "{what} calls something the ground truth:\n{flat}");
    }
    assert!(help().contains("optional detail"), "--help says what the history is");
}

fn list(format: &str) -> String {
    let out = Command::new(chaos_bin()).args(["list", "--format", format]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A table of `doc` against `dhp-chaos list --format FORMAT` (the
/// invariants' declarations), each mismatch named.
fn table_is_declared(doc_name: &str, doc: &str, format: &str) -> Vec<String> {
    use dhp_kit::doc_table::{cells, mismatches, rows_after};
    let want_text = list(format);
    let header_line = want_text.lines().next().unwrap();
    let header = cells(header_line);
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let want = rows_after(&want_text, "").unwrap();
    let Some(have) = rows_after(doc, header_line) else {
        return vec![format!("{doc_name}: no table with the header {header_line:?}")];
    };
    let mut wrong = mismatches(doc_name, &header, &have, &want);
    if wrong.is_empty() && !doc.contains(&want_text) {
        wrong.push(format!("{doc_name}: the table's layout is not `dhp-chaos list --format {format}`'s"));
    }
    wrong
}

/// dhp-chaos/README.md's table of invariants and CONTRACT.md's table of
/// their sources are the declarations' (`dhp-chaos list`), and no other
/// document of the chaos harness keeps a table of them.
#[test]
fn the_invariant_tables_are_the_declarations() {
    let mut wrong = table_is_declared("dhp-chaos/README.md", README, "markdown");
    wrong.extend(table_is_declared("dhp-chaos/CONTRACT.md", CONTRACT, "sources"));
    let pages = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/chaos");
    for e in std::fs::read_dir(&pages).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        for header in ["| name | holds when |", "| invariant | needs |", "| name | sections | holds when |"] {
            if text.contains(header) {
                wrong.push(format!(
                    "{}: a second table of the invariants ({header}); link dhp-chaos/README.md's",
                    p.display()
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{}\n(print the tables with `dhp-chaos list --format markdown|sources`)",
        wrong.join("\n")
    );
    // the short list names every invariant, in order
    let names: Vec<String> = list("text").lines().map(|l| l.split_whitespace().next().unwrap().to_string()).collect();
    let declared: Vec<&str> = dhp_chaos::check::DESCRIPTORS.iter().map(|d| d.name).collect();
    assert_eq!(names, declared);
}
