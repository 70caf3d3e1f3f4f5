//! The same failovers on a cluster with asynchronous replication
//! (`--pg-cluster async`: synchronous_standby_names = ''): during each lag
//! window the primary goes on acknowledging checkpoints the standby never
//! receives, and the failover loses them. The harness must say so:
//! `no-lost-commits-across-db-crash` is violated, and every lost seq —
//! recomputed here from the history alone — is named in its findings.
use crate::common::*;
use crate::pg_failover_support::*;

#[test]
fn asynchronous_replication_is_caught_losing_acknowledged_checkpoints() {
    let r = run_chaos("pg-failover-async", &failover_args("async", "35", "6", "db-failover=1"));
    assert_eq!(r.code, 1, "the lost acknowledgements must fail the run\n{}", r.dump());
    let round = r.out.join("round-0000");
    let lost = lost_by_history(&round);
    assert!(!lost.is_empty(), "the lag window must have lost acknowledged checkpoints\n{}", r.dump());
    let found = r.violations("no-lost-commits-across-db-crash");
    assert!(!found.is_empty(), "{}", r.dump());
    let text = found.join("\n");
    assert!(text.contains("lost in failover"), "{text}");
    for (hid, seq) in &lost {
        let short = &hid[..12];
        assert!(
            found.iter().any(|f| f.contains(short) && f.contains(&format!(" {seq} (next_n"))),
            "lost seq {seq} of {short} not named:\n{text}"
        );
    }
}
