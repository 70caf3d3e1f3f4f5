//! A `dhp` without failpoints (the installed tools) cannot be made to kill
//! itself at a failpoint: dhp-chaos asks it at the start (a failpoint that
//! must fire) and refuses failpoint faults that were asked for, or turns
//! the default ones off and says so — it never runs them as a silent no-op.
//! The stand-in for such a build is the real `dhp` run with
//! `DHP_FAILPOINTS` removed from its environment, which is exactly what a
//! build without the feature does with it: nothing.
use crate::common::*;
use std::os::unix::fs::PermissionsExt;

fn run(dhp: &std::path::Path, out: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let o = std::process::Command::new(chaos_bin())
        .args(args)
        .args([
            "--quiet",
            "--allow-uncovered",
            "all",
            "--seed",
            "3",
            "--handoffs",
            "1",
            "--dlq-handoffs",
            "0",
            "--chunks",
            "40",
        ])
        .arg("--dhp")
        .arg(dhp)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

#[test]
fn failpoint_faults_need_a_dhp_with_failpoints() {
    assert!(dhp_chaos::locate::has_failpoints(&dhp_bin()).unwrap(), "the test build of dhp has failpoints");
    let t = tempfile::tempdir().unwrap();
    let fake = t.path().join("dhp-without-failpoints");
    std::fs::write(&fake, format!("#!/bin/sh\nexec env -u DHP_FAILPOINTS '{}' \"$@\"\n", dhp_bin().display())).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(!dhp_chaos::locate::has_failpoints(&fake).unwrap());

    for (i, args) in [&["--nemesis", "kill,failpoint"][..], &["--failpoint-rate", "0.5"][..]].iter().enumerate() {
        let out = t.path().join(format!("refused-{i}"));
        let (code, stdout, stderr) = run(&fake, &out, args);
        assert_eq!(code, 2, "{args:?}\n{stdout}\n{stderr}");
        assert!(stderr.contains("has no failpoints") && stderr.contains("cannot be injected"), "{stderr}");
        assert!(!out.exists(), "{args:?}: nothing may start");
    }

    // the default rate: off, and said
    let out = t.path().join("default");
    let (code, stdout, stderr) = run(&fake, &out, &["--faults", "kill-worker=1", "--fault-seconds", "5"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("has no failpoints") && stdout.contains("failpoint faults are off"), "{stdout}");
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("round-0000/round.json")).unwrap()).unwrap();
    assert_eq!(meta["config"]["failpoint_rate"], 0.0, "{}", meta["config"]);
}
