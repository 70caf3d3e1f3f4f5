//! A worker's descendant that clears its environment and leaves its
//! session by a double fork (`setsid env -i`, issue 47 item 0) does not
//! survive a round reported held: the round's cgroup finds it, the harness
//! ends it and counts it against the round. (The environment marker alone
//! missed it: the round was ALL INVARIANTS HELD, exit 0, and every such
//! `sleep` still ran afterwards.)
use crate::common::*;
use serde_json::Value;

/// A `--workers` command that leaves a double-forked, setsid descendant
/// with an empty environment behind (its pid appended to `pids`), then
/// runs `dhp work`.
fn escaping_worker(dir: &std::path::Path, pids: &std::path::Path) -> String {
    let script = dir.join("worker.sh");
    let body = format!(
        "#!/bin/sh\n\
         (setsid env -i /bin/sh -c 'echo $$ >> {}; exec /bin/sleep 300' </dev/null >/dev/null 2>&1 &)\n\
         exec {} work \"$@\"\n",
        pids.display(),
        dhp_bin().display()
    );
    std::fs::write(&script, body).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script.display().to_string()
}

/// Running and not a zombie.
fn runs(pid: i64) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
}

#[test]
fn a_descendant_with_an_empty_environment_is_ended_and_counted_against_the_round() {
    let tmp = tempfile::tempdir().unwrap();
    let pids = tmp.path().join("escaped.pids");
    let w = escaping_worker(tmp.path(), &pids);
    let r = crate::common::bins::run_small("env-cleared-survivor", 7, 4, &["--workers", &w, "--failpoint-rate", "0"]);
    let escaped: Vec<i64> =
        std::fs::read_to_string(&pids).unwrap_or_default().lines().filter_map(|l| l.trim().parse().ok()).collect();
    let alive: Vec<i64> = escaped.iter().copied().filter(|p| runs(*p)).collect();
    // end them whatever the verdict, so that a failing run leaves nothing behind
    for p in &alive {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*p as i32), nix::sys::signal::Signal::SIGKILL);
    }
    assert!(!escaped.is_empty(), "no worker left a descendant\n{}", r.dump());
    assert!(alive.is_empty(), "still running after the run: {alive:?} of {escaped:?}\n{}", r.dump());
    assert_eq!(r.code, 1, "a survivor fails the round\n{}", r.dump());
    let report: Value =
        serde_json::from_slice(&std::fs::read(r.out.join("round-0000/round-report.json")).unwrap()).unwrap();
    let survivors: Vec<&str> = report["survivors"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    for p in &escaped {
        assert!(
            survivors.iter().any(|s| s.starts_with(&format!("pid {p} ")) && s.contains("sleep 300")),
            "{p}: {survivors:?}"
        );
    }
    assert!(r.stdout.contains("[survivor]"), "{}", r.dump());
    // the harness's record says which net found them
    let own = std::fs::read_to_string(r.out.join("round-0000/harness.jsonl")).unwrap();
    let swept: Vec<Value> = own
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["what"] == "descendants-swept")
        .collect();
    assert!(swept.len() == 1 && swept[0]["tracked_by"] == "cgroup", "{own}");
}
