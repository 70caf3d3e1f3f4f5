//! Store disk faults that cannot run are refused before anything starts:
//! I/O errors (no device-mapper error target here, so not simulated),
//! store-full without a store disk, a store disk on PostgreSQL, and a
//! store disk too small for the WAL.
use crate::common::*;

fn refused(name: &str, args: &[&str], says: &str) {
    let r = run_chaos(name, args);
    assert_eq!(r.code, 2, "{}", r.dump());
    assert!(r.stderr.contains(says), "expected {says:?}\n{}", r.dump());
    assert!(!r.out.join("round-0000").exists(), "a round started\n{}", r.dump());
}

#[test]
fn store_disk_faults_that_cannot_run_are_refused() {
    refused("io-errors", &["--io-errors"], "--io-errors is not simulated");
    refused("io-errors-why", &["--io-errors"], "device-mapper");
    refused("store-full-no-disk", &["--faults", "store-full=1"], "need --store-disk SIZE");
    refused("store-disk-pg", &["--store-disk", "8m", "--store", "postgres"], "does not apply to --store postgres");
    refused("store-disk-small", &["--store-disk", "1m"], "--store-disk needs at least 2m");
    refused("store-disk-size", &["--store-disk", "lots"], "--store-disk wants a size");
}
