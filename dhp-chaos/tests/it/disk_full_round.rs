//! Disk faults: the transport server's logs on a 256 KiB tmpfs that the
//! harness fills until ENOSPC and frees again. The server must refuse what
//! it cannot write: nothing acknowledged may be missing or torn in the
//! peer's log (peer-acks), and the log still agrees with the store.
use crate::common::*;

#[test]
fn a_full_disk_never_loses_an_acknowledged_checkpoint() {
    let r = run_chaos(
        "disk-full",
        &[
            // not a coverage test: what the round reached is beside the point
            "--allow-uncovered",
            "all",
            "--seed",
            "9",
            "--handoffs",
            "2",
            "--dlq-handoffs",
            "0",
            "--chunks",
            "80",
            "--pace",
            "0.02",
            "--ship",
            "tcp",
            "--disk",
            "256k",
            "--faults",
            "disk-full=3,kill-worker=1",
            "--fault-interval",
            "0.2,0.4",
            "--fault-seconds",
            "20",
            "--failpoint-rate",
            "0",
        ],
    );
    assert!(r.code == 0 || r.code == 1, "harness error\n{}", r.dump());
    for inv in ["peer-acks", "transport", "fencing", "checkpoints"] {
        assert!(r.violations(inv).is_empty(), "{inv}: {:#?}\n{}", r.violations(inv), r.dump());
        assert!(r.checked(inv) > 0, "{inv} checked nothing\n{}", r.dump());
    }
    assert!(r.results["rounds"][0]["env"]["disk_full"].as_u64().unwrap_or(0) >= 1, "{}", r.dump());
    // the ballast really hit ENOSPC
    let round = r.out.join("round-0000");
    let hist = crate::common::history_text(&round.join("history.jsonl")).unwrap();
    assert!(
        hist.lines().any(|l| l.contains("\"disk-full\"") && l.contains("No space left on device")),
        "no disk-full fault reached ENOSPC"
    );
    let svg = std::fs::read_to_string(round.join("timeline.svg")).unwrap();
    assert!(svg.contains("disk-full "), "full disks are bands on the timeline");
    // unmounted at the end, the logs kept underneath
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(!mounts.contains(&*round.join("peer").to_string_lossy()), "the tmpfs is still mounted");
    assert!(std::fs::read_dir(round.join("peer")).unwrap().any(|e| e
        .unwrap()
        .path()
        .extension()
        .is_some_and(|x| x == "log")));
}
