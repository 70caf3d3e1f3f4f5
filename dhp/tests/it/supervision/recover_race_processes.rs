//! Exactly one of N racing recoverer processes wins the CAS; the losers get
//! the typed OwnershipLost exit code and change nothing.
use crate::common::*;
use dhp_core::{supervisor::Supervisor, Config, Runner};
use std::process::{Command, Stdio};

#[test]
fn eight_recoverer_processes_one_winner() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let (_, v, _) = dhp(&["dispatch", root, "--census", "1000,3000,100"], &[]);
    let hid = v["hid"].as_str().unwrap().to_string();
    let r = Runner::open(root, "w0", Config::default()).unwrap();
    drop(r.claim(&hid).unwrap());
    dhp_testkit::store::expire_lease(&r, &hid).unwrap();
    assert_eq!(Supervisor::open(root, "s", Config::default()).unwrap().scan().unwrap()[0].kind().as_str(), "orphaned");

    // A barrier file: every process says it is ready, blocks until the
    // barrier exists, then races.
    let barrier = dir.path().join("go");
    let ready = |i: usize| dir.path().join(format!("ready-{i}"));
    let mut children: Vec<_> = (0..8)
        .map(|i| {
            let script = format!(
                "touch {r}; while [ ! -e {b} ]; do sleep 0.001; done; exec {dhp} work {root} --runner r{i} recover {hid} --json",
                r = ready(i).display(),
                b = barrier.display(),
                dhp = dhp_bin().display()
            );
            Command::new("sh").arg("-c").arg(script).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
        })
        .collect();
    start_race(&mut children, ready, &barrier, 30.0);
    let codes: Vec<i32> = children.into_iter().map(|c| c.wait_with_output().unwrap().status.code().unwrap()).collect();
    assert_eq!(codes.iter().filter(|c| **c == 0).count(), 1, "exactly one winner: {codes:?}");
    // A loser sees OwnershipLost (5) while the winner runs, StateError (6)
    // once the winner has completed.
    assert!(codes.iter().all(|c| matches!(c, 0 | 5 | 6)), "losers exit 5 or 6: {codes:?}");
    let st = r.status(&hid).unwrap();
    assert_eq!((st["status"].as_str(), st["attempt"].as_i64()), (Some("completed"), Some(1)), "{st}");
}
