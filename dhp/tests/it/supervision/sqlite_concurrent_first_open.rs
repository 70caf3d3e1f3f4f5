//! Many `dhp` processes opening a store the reference made, all at once:
//! the first of them upgrades it (dhp-rs's extra indexes), the others wait
//! for the write lock. None may die of `database is locked` (a deferred
//! transaction that must upgrade to a write lock, in WAL mode, gets
//! SQLITE_BUSY at once, without its busy handler: issue 33 item 14).
use crate::common::*;
use std::process::{Command, Stdio};

#[test]
fn concurrent_first_opens_of_a_reference_store_all_succeed() {
    for round in 0..6 {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_str().unwrap();
        let hid = refctl_ok(&["dispatch", root, "--kind", "race", "--inputs", "{}", "--schema", "{}"], &[])["hid"]
            .as_str()
            .unwrap()
            .to_string();
        // two supervisors and eight readers, started back to back
        let mut children = Vec::new();
        for i in 0..2 {
            let name = format!("sup{i}");
            children.push(
                Command::new(dhp_bin())
                    .args(["supervisor", root, &name, "0.3"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap(),
            );
        }
        for _ in 0..8 {
            children.push(
                Command::new(dhp_bin())
                    .args(["status", root, &hid, "--json"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap(),
            );
        }
        for (i, c) in children.into_iter().enumerate() {
            let out = c.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "round {round}, process {i}: {:?}: {err}", out.status);
            assert!(!err.contains("locked"), "round {round}, process {i}: {err}");
        }
        // the store was upgraded once and still serves
        let (code, st, err) = dhp(&["status", root, &hid], &[]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(st["status"], "pending", "{st}");
    }
}
