//! Both implementations on one store at the same time: a Python census
//! worker and a Rust census worker run concurrently on two handoffs of the
//! same SQLite file, and a Rust supervisor watches them both.
use crate::common::*;
use dhp_core::{Config, Runner};
use dhp_workload::census;
use std::process::{Command, Stdio};

#[test]
fn python_and_rust_workers_share_a_live_store() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let (_, a, _) = dhp(&["dispatch", root, "--census", "1000,21000,100"], &[]);
    let (_, b, _) = dhp(&["dispatch", root, "--census", "21000,41000,100"], &[]);
    let (ha, hb) = (a["hid"].as_str().unwrap().to_string(), b["hid"].as_str().unwrap().to_string());

    let mut sup =
        Command::new(dhp_bin()).args(["supervisor", root, "rs-sup", "60"]).stdout(Stdio::null()).spawn().unwrap();
    let mut py = Command::new(dhp_testkit::python())
        .arg(refctl_path())
        .args(["census", root, &ha, "--runner", "py-w", "--mode", "claim", "--chunk", "100", "--pace", "0.005"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut rs = Command::new(dhp_bin())
        .args(["work", root, "--runner", "rs-w", "claim", &hb, "--pace", "0.005", "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Meanwhile, Rust reads the store the whole time, until both workers
    // exited (done or failed: a count of reads was no bound under load, and
    // said nothing about a worker that had died).
    let r = Runner::open(root, "observer", Config::default()).unwrap();
    while py.try_wait().unwrap().is_none() || rs.try_wait().unwrap().is_none() {
        for h in [&ha, &hb] {
            r.status(h).unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let (po, ro) = (py.wait_with_output().unwrap(), rs.wait_with_output().unwrap());
    assert!(po.status.success() && ro.status.success(), "{po:?} {ro:?}");
    for h in [&ha, &hb] {
        assert_eq!(r.status(h).unwrap()["status"], "completed", "{h}");
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(sup.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    assert!(sup.wait().unwrap().success());

    for (hid, lo, hi) in [(&ha, 1000, 21000), (&hb, 21000, 41000)] {
        let st = r.status(hid).unwrap();
        let want = census::expected(lo, hi, 100);
        assert_eq!(
            (&st["result"]["prime_count"], &st["result"]["prime_sum"]),
            (&want["prime_count"], &want["prime_sum"])
        );
        assert_eq!((st["attempt"].as_i64(), st["checkpoints"].as_i64()), (Some(0), Some(200)), "no false orphan: {st}");
    }
}
