//! The env_config fuzz target's invariant (every time knob a validated
//! Config holds converts to a Duration): `DHP_LEASE_INTERVAL_S=1e300` made
//! `dhp work` panic in the heartbeat thread, and `DHP_SUPERVISOR_SCAN_S=1e300`
//! (with a larger leader TTL) made `dhp supervisor` panic, both in
//! `Duration::from_secs_f64`. Such values are now refused when the config
//! is read (the bounds in `dhp_core::config`).

use dhp_core::Config;
use std::process::Command;

fn cfg(vars: &[(&str, &str)]) -> dhp_core::Result<Config> {
    Config::from_lookup(|k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string()))
}

#[test]
fn huge_durations_are_config_errors_not_panics() {
    for vars in [
        &[("DHP_LEASE_INTERVAL_S", "1e300")][..],
        &[("DHP_SUPERVISOR_SCAN_S", "1e300"), ("DHP_LEADER_TTL_S", "1e301")],
        &[("DHP_LEADER_TTL_S", "1e300")],
        &[("DHP_STALL_TIMEOUT_S", "1e300")],
        &[("DHP_LEASE_INTERVAL_S", "1e8"), ("DHP_LEASE_MAX_MISSED", "9223372036854775807")],
    ] {
        let e = cfg(vars).unwrap_err();
        assert!(e.to_string().contains(vars[0].0), "{vars:?}: the error should name the variable: {e}");
        dhp_testkit::fuzzing::env_config(vars.iter().map(|(k, v)| format!("{k}={v}\n")).collect::<String>().as_bytes());
    }
    assert!(cfg(&[("DHP_LEASE_INTERVAL_S", "86400"), ("DHP_STALL_TIMEOUT_S", "3600")]).is_ok());

    // The binary refuses the setting with its config exit code, no panic.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("r");
    let out = Command::new(env!("CARGO_BIN_EXE_dhp"))
        .args(["dispatch", "--create", root.to_str().unwrap(), "--census", "0,200,100", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let hid = String::from_utf8_lossy(&out.stdout).split('"').skip_while(|s| *s != "hid").nth(2).unwrap().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_dhp"))
        .args(["work", root.to_str().unwrap(), "--runner", "w", "claim", &hid, "--json"])
        .env("DHP_LEASE_INTERVAL_S", "1e300")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_ne!(out.status.code(), Some(101), "{err}");
    assert_ne!(out.status.code(), Some(0), "{err}");
}
