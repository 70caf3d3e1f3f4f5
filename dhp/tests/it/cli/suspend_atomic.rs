//! Issue 11 item 6: `dhp suspend` to a path that cannot be written used to
//! exit 11 with the handoff already suspended and no bundle anywhere. The
//! bundle is now on disk before the status change commits.
use crate::common::*;
use dhp_core::envelope::{self, BuildOptions};
use dhp_core::{Config, Runner};
use serde_json::json;

#[test]
fn a_suspend_that_cannot_write_its_bundle_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let r = Runner::open(&root, "w1", Config::default()).unwrap();
    let env = envelope::build("s", json!({"inline": {"n": 1}}), json!({}), BuildOptions::default()).unwrap();
    let hid = r.dispatch(&env).unwrap();
    let ctx = r.claim(&hid).unwrap();
    ctx.checkpoint(&json!({"i": 1})).unwrap();
    let root = root.to_str().unwrap();
    let before = dump(root.as_ref());

    // Three ways to fail: a directory that does not exist, a "directory"
    // that is a file, and a target that is a non-empty directory — the
    // last one fails only at the rename, after the temporary file was
    // written, so it also proves the temporary file is cleaned up.
    let missing = dir.path().join("nonexistent/dir/b.bundle");
    let file = dir.path().join("plain-file");
    std::fs::write(&file, b"x").unwrap();
    let under_file = file.join("b.bundle");
    let outdir = dir.path().join("out");
    std::fs::create_dir_all(outdir.join("b.bundle/occupied")).unwrap();
    let occupied = outdir.join("b.bundle");
    for (out, parent_entries) in [(&missing, 0), (&under_file, 0), (&occupied, 1)] {
        let (code, _, err) = dhp(&["suspend", root, &hid, "-o", out.to_str().unwrap()], &[]);
        assert_eq!(code, 11, "{err}");
        assert_eq!(dump(root.as_ref()), before, "store changed by a failed suspend to {}", out.display());
        assert!(!out.is_file());
        let left = std::fs::read_dir(out.parent().unwrap()).map(|d| d.count()).unwrap_or(0);
        assert_eq!(left, parent_entries, "a temporary file was left beside {}", out.display());
    }
    assert_eq!(r.status(&hid).unwrap()["status"], "running");
    ctx.checkpoint(&json!({"i": 2})).unwrap();

    // The same command to a writable path suspends and the bundle resumes.
    let good = dir.path().join("b.bundle");
    let (code, v, err) = dhp(&["suspend", root, &hid, "-o", good.to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["bytes"].as_u64().unwrap() as usize, std::fs::metadata(&good).unwrap().len() as usize);
    assert_eq!(r.status(&hid).unwrap()["status"], "suspended");
    let other = Runner::open(dir.path().join("other"), "w2", Config::default()).unwrap();
    assert_eq!(other.resume(&std::fs::read(&good).unwrap()).unwrap(), hid);
    assert_eq!(other.last_checkpoint(&hid).unwrap(), Some(json!({"i": 2})));
}
