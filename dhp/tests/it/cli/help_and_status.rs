//! Issue 13: every positional argument has a description in `--help`, and
//! `dhp status` columns line up whatever the values' widths.
use crate::cli_support::*;

#[test]
fn every_positional_argument_is_described() {
    for cmd in ["supervisor", "dispatch", "status", "ingest", "suspend", "resume", "ack", "decide", "work", "transport"]
    {
        let help = run(&[cmd, "--help"], &[]);
        assert_eq!(help.code, 0, "{help:?}");
        let args: Vec<&str> = help
            .stdout
            .lines()
            .skip_while(|l| !l.starts_with("Arguments:"))
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .collect();
        assert!(!args.is_empty(), "{cmd} lists its arguments: {}", help.stdout);
        for line in args {
            let parts: Vec<&str> = line.split_whitespace().collect();
            assert!(parts.len() >= 2, "{cmd}: {line:?} has no description");
        }
    }
}

#[test]
fn status_columns_line_up() {
    let dir = tempfile::tempdir().unwrap();
    let (root, hid) = store_with_census(dir.path());
    let r = root.to_str().unwrap();
    // A second handoff with wider values: 12 checkpoints and an owner.
    let big =
        run(&["--json", "dispatch", r, "--census", "0,1200,100"], &[]).json()["hid"].as_str().unwrap().to_string();
    let w = run(&["work", r, "--runner", "a-long-worker-name", "claim", &big], &[]);
    assert_eq!(w.code, 0, "{w:?}");
    let out = run(&["status", r], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", out.stdout);
    assert!(lines.iter().any(|l| l.starts_with(&hid[..12])));
    // Each column starts at the same offset in every line (the header's
    // word starts), and right-aligned numbers end at the header's end.
    let header = lines[0];
    let starts: Vec<usize> = ["status", "owner"].iter().map(|w| header.find(w).unwrap()).collect();
    let ends: Vec<usize> = ["attempt", "checkpoints"].iter().map(|w| header.find(w).unwrap() + w.len()).collect();
    for l in &lines[1..] {
        for &s in &starts {
            let c = l.as_bytes()[s];
            assert!(c != b' ' && l.as_bytes()[s - 1] == b' ', "column at {s} in {l:?}\n{}", out.stdout);
        }
        for &e in &ends {
            assert!(
                l.as_bytes()[e - 1].is_ascii_digit() && l.as_bytes()[e] == b' ',
                "number ending at {e} in {l:?}\n{}",
                out.stdout
            );
        }
    }
}
