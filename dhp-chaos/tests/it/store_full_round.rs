//! Store disk faults: the round's SQLite store on an 8 MiB tmpfs that the
//! harness fills until ENOSPC and frees again, again and again. SQLite
//! refuses commits it cannot write (SQLITE_FULL), dhp turns that into a
//! typed StoreError (exit 11), and once the disk is freed the work
//! completes: every invariant holds, no-torn-after-store-full included.
use crate::common::*;

#[test]
fn a_full_store_disk_loses_nothing_acknowledged_and_the_work_completes() {
    let r = run_chaos(
        "store-full",
        &[
            // not a coverage test: what the round reached is beside the point
            "--allow-uncovered",
            "all",
            "--seed",
            "5",
            "--handoffs",
            "2",
            "--dlq-handoffs",
            "0",
            "--chunks",
            "60",
            "--pace",
            "0.02",
            "--store-disk",
            "8m",
            "--faults",
            "store-full=3,kill-worker=1",
            // early and often: while the WAL still grows, every commit needs new space
            "--fault-interval",
            "0.2,0.4",
            "--fault-seconds",
            "12",
            "--failpoint-rate",
            "0",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.dump());
    for inv in ["no-torn-after-store-full", "outcome", "fencing", "checkpoints", "exactly-once"] {
        assert!(r.violations(inv).is_empty(), "{inv}: {:#?}\n{}", r.violations(inv), r.dump());
        assert!(r.checked(inv) > 0, "{inv} checked nothing\n{}", r.dump());
    }
    assert!(r.results["rounds"][0]["env"]["store_full"].as_u64().unwrap_or(0) >= 1, "{}", r.dump());
    let round = r.out.join("round-0000");
    let hist = crate::common::history_text(&round.join("history.jsonl")).unwrap();
    // the ballast really hit ENOSPC, and SQLite really refused a write for it
    assert!(
        hist.lines().any(|l| l.contains("\"store-full\"") && l.contains("No space left on device")),
        "no store-full fault reached ENOSPC"
    );
    let full: Vec<&str> = hist.lines().filter(|l| l.contains("\"fail\"") && l.contains("disk is full")).collect();
    assert!(!full.is_empty(), "no operation ever saw SQLITE_FULL: the fault did not bite\n{}", r.dump());
    // ... and the workers it refused exited with StoreError's code
    assert!(hist.lines().any(|l| l.contains("\"exit\"") && l.contains("\"code\":11")), "no worker exited 11");
    let svg = std::fs::read_to_string(round.join("timeline.svg")).unwrap();
    assert!(svg.contains("store-full "), "full store disks are bands on the timeline");
    // unmounted at the end, the store kept underneath (the checker read it there)
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(!mounts.contains(&*round.join("store").to_string_lossy()), "the tmpfs is still mounted");
    assert!(round.join("store/dhp.sqlite3").is_file());
    assert!(!round.join("store/ballast.fill").exists(), "the ballast outlived the round");
    let (code, _) = analyze(&round);
    assert_eq!(code, 0, "analyze of the saved round disagrees");
}
