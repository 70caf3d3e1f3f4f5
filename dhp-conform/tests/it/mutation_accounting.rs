//! scripts/mutation_summary.py's accounting of unreached mutants, on a
//! made-up run: a mutant on a line the instrumented suite never ran is a
//! survivor without a build, a tested one keeps its outcome, a caught
//! mutant on an "unreached" line is reported as a contradiction, and a
//! seeded draw is repeatable and never picks an unreached or tested one.

use serde_json::Value;
use std::fs;
use std::path::Path;
use std::process::Command;

const MUTANTS: &[&str] = &[
    "dhp-core/src/a.rs:10:5: replace f -> bool with true",
    "dhp-core/src/a.rs:20:9: replace < with > in g",
    "dhp-core/src/a.rs:30:9: replace + with - in h",
    "dhp-core/src/b.rs:5:5: replace k -> u8 with 0",
    "dhp-core/src/b.rs:6:5: replace k -> u8 with 1",
    "dhp-core/src/b.rs:7:5: replace m -> bool with false",
    "dhp-core/src/b.rs:8:5: replace n -> bool with false",
];

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root")
}

fn summary(args: &[&str]) -> std::process::Output {
    let out = Command::new("python3")
        .arg(repo().join("scripts/mutation_summary.py"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("python3");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out
}

fn write(dir: &Path, name: &str, lines: &[&str]) {
    fs::write(dir.join(name), lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
}

#[test]
fn unreached_mutants_are_survivors_counted_without_a_build() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path();
    write(out, "all-mutants.txt", MUTANTS);
    let mo = out.join("mutants.out");
    fs::create_dir(&mo).unwrap();
    // tested: a.rs:10 caught, a.rs:20 missed, b.rs:7 caught although the
    // coverage below says its line never ran (a contradiction)
    write(&mo, "caught.txt", &[MUTANTS[0], MUTANTS[5]]);
    write(&mo, "missed.txt", &[MUTANTS[1]]);
    for k in ["timeout.txt", "unviable.txt"] {
        write(&mo, k, &[]);
    }
    // b.rs:5 and b.rs:6 share a line; b.rs:* survivors on line 5 are noted
    write(out, "notes.tsv", &["# name\twhy", "dhp-core/src/b.rs:5:*\tnot observable, for the test"]);
    let lcov = out.join("suite.lcov");
    let root = repo().display().to_string();
    fs::write(
        &lcov,
        format!(
            "SF:{root}/dhp-core/src/a.rs\nDA:10,4\nDA:20,2\nDA:30,0\nend_of_record\n\
             SF:{root}/dhp-core/src/b.rs\nDA:5,0\nDA:7,0\nDA:8,3\nend_of_record\n"
        ),
    )
    .unwrap();
    summary(&["--reach", out.to_str().unwrap(), lcov.to_str().unwrap()]);

    let reach = fs::read_to_string(out.join("reach.tsv")).unwrap();
    assert!(reach.contains(&format!("{}\t0\n", MUTANTS[2])), "{reach}");
    assert!(reach.contains(&format!("{}\t4\n", MUTANTS[0])), "{reach}");
    // b.rs:6 has no counter in the coverage: it is reached (tested), never assumed
    assert!(reach.contains(&format!("{}\t-\n", MUTANTS[4])), "{reach}");

    let s: Value = serde_json::from_str(&fs::read_to_string(out.join("score.json")).unwrap()).unwrap();
    // unreached: a.rs:30, b.rs:5, b.rs:7
    assert_eq!(s["unreached"], 3, "{s}");
    assert_eq!(s["unreached_not_observable"], 1, "{s}"); // b.rs:5, noted
                                                         // a.rs:30 has no note; b.rs:7 was tested and caught (kept, and flagged)
    assert_eq!(s["unreached_observable"], 1, "{s}");
    assert_eq!(s["reach_contradictions"], 1, "{s}");
    assert_eq!(s["reached"], 4, "{s}");
    assert_eq!(s["reached_tested"], 2, "{s}");
    assert_eq!(s["sample"], true, "{s}");
    // reached sample: 1 caught of 2 observable
    assert_eq!(s["score_reached_observable_percent"], 50.0, "{s}");
    // estimate: 4 reached × 1/2 caught over (4 × 2/2 observable + 1 unreached
    // observable): 2 / 5
    assert_eq!(s["score_observable_percent"], 40.0, "{s}");
    let md = fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("## Reach contradictions") && md.contains(MUTANTS[5]), "{md}");
    assert!(md.contains(&format!("| `{}` | **observable: no assertion catches it yet** |", MUTANTS[2])), "{md}");

    // a draw: only reached mutants without an outcome (b.rs:6 and b.rs:8),
    // the same for the same seed
    let draw = |seed: &str| String::from_utf8(summary(&["--draw", out.to_str().unwrap(), "5", seed]).stdout).unwrap();
    let first = draw("7");
    let mut got: Vec<&str> = first.lines().collect();
    got.sort();
    assert_eq!(got, vec![MUTANTS[4], MUTANTS[6]]);
    assert_eq!(first, draw("7"));
}
