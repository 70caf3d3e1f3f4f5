//! `--compare ours` with a directory and a PostgreSQL `--store`: the same
//! implementation on both engines side by side, in the text table and the
//! Markdown report.
use crate::common::*;
use crate::pg_common;

#[test]
fn compare_shows_ours_on_both_engines() {
    let db = pg_common::FreshDb::new("compare");
    let dir = tempfile::tempdir().unwrap();
    let args = ["--compare", "ours", "--store", dir.path().to_str().unwrap(), "--store", &db.url, "--level", "core"];
    let run = conform(&args);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let header = run
        .stdout
        .lines()
        .find(|l| l.starts_with('|') && l.contains("ours@"))
        .unwrap_or_else(|| panic!("no table:\n{}", run.stdout));
    let sqlite = header.find("ours@sqlite").expect("a column for ours on SQLite");
    let pg = header.find("ours@postgres").expect("a column for ours on PostgreSQL");
    assert!(sqlite < pg, "columns in --store order: {header}");
    // every core assertion is a row with a verdict in both columns
    let rows: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with("| ") && l.contains("no-lost-results")).collect();
    assert_eq!(rows.len(), 1, "{}", run.stdout);

    let mut md = args.to_vec();
    md.extend(["--format", "markdown"]);
    let run = conform(&md);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("ours@sqlite") && run.stdout.contains("ours@postgres"), "{}", run.stdout);
}
