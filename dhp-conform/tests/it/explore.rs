//! `--explore` (issue 45): random sequences judged by dhp-model. dhp-rs
//! passes for twenty seeds; the reference is green with its pinned §13
//! divergences; mutants are caught, shrunk to at most 8 steps, and their
//! replay files reproduce them (and pass against dhp-rs).
use crate::common::*;
use std::path::Path;

/// Family rows of a run (`explore-*`), by outcome.
fn rows(run: &Run) -> Vec<(String, String, String)> {
    run.outcomes()
        .into_iter()
        .filter(|((_, a), _)| a.starts_with("explore-"))
        .map(|((_, a), (o, m))| (a, o, m))
        .collect()
}

#[test]
fn ours_passes_twenty_seeds() {
    let seeds: Vec<String> = (1..=20).map(|s| s.to_string()).collect();
    let runs: Vec<(String, Run)> = std::thread::scope(|sc| {
        let hs: Vec<_> = seeds
            .chunks(5)
            .map(|chunk| {
                sc.spawn(move || {
                    chunk
                        .iter()
                        .map(|s| {
                            // two sequences whatever the machine's speed: the default
                            // --time of 30 s (60 s while a family is missing) ended
                            // seed 6 after its first sequence at a load of 40, and
                            // explore-release was "never exercised"
                            let args = [
                                "--explore",
                                "--seed",
                                s,
                                "--sequences",
                                "2",
                                "--steps",
                                "25",
                                "--time",
                                "3600",
                                "--format",
                                "json",
                            ];
                            (s.clone(), conform(&args))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    for (seed, run) in &runs {
        assert_eq!(run.code, 0, "seed {seed}:\n{}\n{}", run.stdout, run.stderr);
        let rows = rows(run);
        // fourteen families (ours declares every feature) and the pinned row
        assert_eq!(rows.len(), 15, "seed {seed}: {rows:?}");
        assert!(rows.iter().all(|(_, o, _)| o == "passed"), "seed {seed}: {rows:?}");
    }
}

#[test]
fn reference_is_green_with_its_pinned_divergences() {
    let expect = concat!(env!("CARGO_MANIFEST_DIR"), "/expectations/reference.json");
    let args =
        ["--impl", "reference", "--explore", "--seed", "1", "--time", "8", "--expect", expect, "--format", "json"];
    let run = conform(&args);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let rows = rows(&run);
    let pinned = rows.iter().find(|(a, _, _)| a == "explore-pinned").expect("the pinned row");
    // a pinned divergence met is listed with its reason
    if pinned.1 == "failed" {
        assert!(pinned.2.contains("§13"), "{pinned:?}");
    }
    for (a, o, m) in &rows {
        assert!(a == "explore-pinned" || o == "passed", "{a}: {o} {m}");
    }
}

/// The replay command's file in a failure message.
fn replay_file(msg: &str) -> String {
    let line = msg.lines().find(|l| l.starts_with("replay: dhp-conform replay ")).expect("a replay line");
    line["replay: dhp-conform replay ".len()..].split(" --impl").next().unwrap().to_string()
}

/// Steps of the minimal sequence (`shrunk from N to K steps`).
fn shrunk_to(msg: &str) -> usize {
    let at = msg.find(" to ").expect("shrunk from … to …");
    msg[at + 4..].split(' ').next().unwrap().parse().expect("a step count")
}

/// `mutant` is caught by --explore alone in family `family`, shrunk to
/// ≤ 8 steps; its replay file reproduces it, and dhp-rs passes it.
fn caught_and_shrunk(mutant: &str, family: &str, extra: &str, dir: &Path) {
    let imp = mutant_adapter(mutant, extra);
    let d = dir.join(mutant);
    let d = d.to_str().unwrap();
    // a number of sequences, not a time. The sequences are the seed's, but
    // they run against real leases (6 s): on a loaded machine a step can
    // take long enough for one to run out and a sequence to take another
    // path, so a mutant caught in the 8th here went uncaught in 8 at load
    // ~10 (a CI run with a pg_auto_failover round beside it). 20 sequences
    // cost nothing when it is caught early: the run stops at the first.
    let args = ["--impl", &imp, "--explore", "--seed", "1", "--sequences", "20", "--time", "300"];
    let run = conform(&[&args[..], &["--replay-dir", d, "--format", "json"]].concat());
    assert_eq!(run.code, 1, "{mutant} must be caught:\n{}\n{}", run.stdout, run.stderr);
    let rows = rows(&run);
    let failed: Vec<_> = rows.iter().filter(|(_, o, _)| o == "failed").collect();
    assert_eq!(failed.len(), 1, "{mutant}: {rows:?}");
    let (a, _, msg) = failed[0];
    // the family the minimal sequence ends in; another family's step may
    // show the same broken rule first (e.g. a stale heartbeat before a
    // stale checkpoint), so any is accepted, and printed
    eprintln!("{mutant}: caught in {a} (its rule's family: {family})");
    assert!(shrunk_to(msg) <= 8, "{mutant}: not shrunk to 8 steps:\n{msg}");
    let file = replay_file(msg);
    let again = conform(&["replay", &file, "--impl", &imp, "--runs", "2"]);
    assert_eq!(again.code, 1, "{mutant}: the replay must diverge again:\n{}\n{}", again.stdout, again.stderr);
    assert!(again.stdout.contains("2/2 runs show the recorded divergence"), "{}", again.stdout);
    let ours = conform(&["replay", &file, "--impl", &adapter(""), "--runs", "1"]);
    assert_eq!(ours.code, 0, "{mutant}: dhp-rs must not diverge:\n{}\n{}", ours.stdout, ours.stderr);
}

#[test]
fn mutants_are_caught_shrunk_and_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("no-fence-check", "checkpoint", ""),
        ("release-keeps-lease", "release", ""),
        ("no-schema-validation", "complete", ""),
        ("redispatch-requeues-terminal", "dispatch", ""),
        // ids recomputed from the wire and the store, without the
        // optional `canonical` feature (issue 45, item 2)
        ("ids-escaped-non-ascii", "dispatch", "--without-feature canonical"),
        ("ingest-no-id-check", "transport", ""),
        ("bundle-drops-checkpoints", "suspend", ""),
        // a worker process killed holding its liveness token; a leader
        // asked for its term (ensure_leadership) that does not renew it
        ("no-liveness", "scan", ""),
        ("leader-never-renews", "scan", ""),
    ];
    std::thread::scope(|sc| {
        for (m, f, extra) in cases {
            let dir = dir.path();
            sc.spawn(move || caught_and_shrunk(m, f, extra, dir));
        }
    });
}

#[test]
fn the_explore_only_mutant_passes_every_fixed_assertion() {
    // What makes it explore-only: the fixed suite does not see it.
    for m in crate::common::mutants::EXPLORE_ONLY {
        let run = conform(&["--impl", &mutant_adapter(m, ""), "--level", "extended", "--format", "json"]);
        assert_eq!(run.code, 0, "{m}: {:?}", run.with_outcome("failed"));
    }
}

#[test]
fn canonical_id_bugs_fail_a_fixed_assertion_without_the_canonical_feature() {
    // Issue 45: such bugs passed every fixed assertion unless the adapter
    // declared `canonical`; store-layout now recomputes the ids itself.
    for m in ["ids-float-as-int", "ids-big-int-rounded", "ids-escaped-non-ascii"] {
        let run =
            conform(&["--impl", &mutant_adapter(m, "--without-feature canonical"), "store-layout", "--format", "json"]);
        assert_eq!(run.code, 1, "{m}: {}\n{}", run.stdout, run.stderr);
        assert_eq!(run.with_outcome("failed").len(), 1, "{m}: {}", run.stdout);
    }
}

#[test]
fn explore_rows_in_every_report_format() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
    let (junit, html, badge) = (p("j.xml"), p("html"), p("badge"));
    let base = ["--explore", "--seed", "3", "--sequences", "1", "--steps", "20"];
    let run = conform(&[&base[..], &["--junit", &junit, "--html", &html, "--badge", &badge]].concat());
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let junit = std::fs::read_to_string(&junit).unwrap();
    let html = std::fs::read_to_string(Path::new(&html).join("index.html")).unwrap();
    let md = conform(&[&base[..], &["--format", "markdown"]].concat());
    let json = conform(&[&base[..], &["--format", "json"]].concat());
    for (what, text) in [("junit", &junit), ("html", &html), ("markdown", &md.stdout), ("json", &json.stdout)] {
        assert!(text.contains("explore-recover") && text.contains("explore-pinned"), "{what}:\n{text}");
    }
    assert!(Path::new(&badge).join("ours.json").exists());
}
