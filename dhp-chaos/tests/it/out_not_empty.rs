//! `--out` of a previous run (any non-empty directory) is refused before
//! anything starts: a second run there would mix its rounds and
//! results.json with the first's.
use crate::common::*;

#[test]
fn a_non_empty_out_directory_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("run");
    std::fs::create_dir_all(out.join("round-0000")).unwrap();
    std::fs::write(out.join("results.json"), b"{\"seed\": 1}").unwrap();
    let o = std::process::Command::new(chaos_bin())
        .args(["--seed", "1", "--handoffs", "1", "--quiet", "--dhp"])
        .arg(dhp_bin())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is not empty"), "{stderr}");
    assert_eq!(std::fs::read(out.join("results.json")).unwrap(), b"{\"seed\": 1}");
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 2, "nothing added");
    // an empty directory is fine (not run here: that is every other test)
}
