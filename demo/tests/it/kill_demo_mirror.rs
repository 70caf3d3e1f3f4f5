//! The kill demo end to end against the offline mirror: worker-A killed
//! mid-fetch of page 21, host A's supervisor orphans, host B ingests what
//! was shipped over TCP and its standby finishes: 60/60, zero refetched,
//! every CSV row matching what the mirror serves, exit 0.

use crate::common;

#[test]
fn kill_demo_against_the_mirror_is_green() {
    let tmp = tempfile::tempdir().unwrap();
    let seed = 11;
    let r = common::run_demo(tmp.path(), seed, &[]);
    common::check_green_run(&r, seed);
    // Host A's local buffer log holds what was shipped, too.
    let hid = r.summary["handoff_id"].as_str().unwrap();
    let buf = r.dir.join("host-a").join("ship-buffer").join(format!("{hid}.log"));
    assert_eq!(common::log_seqs(&buf), (0..common::KILL_AT as i64).collect::<Vec<_>>());
    eprintln!("demo run took {:.1}s; timings {}", r.elapsed.as_secs_f64(), r.summary["timings"]);
}
