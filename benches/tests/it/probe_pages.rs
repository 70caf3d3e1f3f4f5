//! `dhp-bench dispatch --claim --pages M`: the pages a claim's commits
//! wrote, named by b-tree, read back from the WAL. A claim rewrites the
//! handoff row and inserts an ownership row, so both tables (and the
//! ownership key) must be among them, and the names must add up to the
//! total it prints.

use std::process::Command;

#[test]
fn a_claims_pages_are_named_by_btree() {
    let tmp = tempfile::Builder::new().prefix("probe-pages-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_dhp-bench"))
        .args(["dispatch", "--dir", tmp.path().to_str().unwrap(), "--n", "20", "--claim", "--pages", "20"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    let mut lines = text.lines().skip_while(|l| !l.contains("WAL frames per call"));
    let head = lines.next().unwrap_or_else(|| panic!("no page summary:\n{text}"));
    let total: f64 = head.split_whitespace().next().and_then(|t| t.parse().ok()).expect("the total first");
    let by: Vec<(f64, String)> = lines
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.parse().ok()?, w.collect::<Vec<_>>().join(" ")))
        })
        .collect();
    let names: Vec<&str> = by.iter().map(|(_, n)| n.as_str()).collect();
    for needed in ["handoffs", "ownership", "sqlite_autoindex_ownership_1"] {
        assert!(names.contains(&needed), "{needed} missing:\n{text}");
    }
    let sum: f64 = by.iter().map(|(k, _)| k).sum();
    assert!(total >= 3.0 && (sum - total).abs() < 0.05, "total {total}, by b-tree {sum}:\n{text}");
}
