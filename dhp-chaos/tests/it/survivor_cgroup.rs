//! A descendant that clears its environment (`env -i`), leaves its session
//! (`setsid`) and is double-forked (reparented before the harness looks)
//! still does not outlive its round: every child of the round is in the
//! round's own cgroup, which no such trick leaves; at the end the group is
//! frozen, every member killed and counted against the round (issue 47 item 0).
use serde_json::Value;

/// A `--workers` command that leaves such a descendant behind, then runs `dhp work`.
fn escaping_worker(dir: &std::path::Path) -> String {
    let script = dir.join("worker.sh");
    let body = format!(
        "#!/bin/sh\n\
         (setsid env -i /bin/sleep 301 </dev/null >/dev/null 2>&1 &)\n\
         exec {} work \"$@\"\n",
        crate::common::dhp_bin().display()
    );
    std::fs::write(&script, body).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script.display().to_string()
}

#[test]
fn a_descendant_with_a_cleared_environment_is_found_killed_and_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let w = escaping_worker(tmp.path());
    let r = crate::common::bins::run_small("env-i-survivor", 5, 2, &["--workers", &w, "--failpoint-rate", "0"]);
    assert_eq!(r.code, 1, "a survivor fails the round\n{}", r.dump());
    assert!(
        !r.stderr.contains("environment marker only"),
        "cgroups are available here (root, cgroup v1)\n{}",
        r.dump()
    );
    let report: Value =
        serde_json::from_slice(&std::fs::read(r.out.join("round-0000/round-report.json")).unwrap()).unwrap();
    let survivors: Vec<&str> = report["survivors"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(!survivors.is_empty() && survivors.iter().all(|s| s.contains("sleep 301")), "{survivors:?}");
    // every survivor was ended
    let own = std::fs::read_to_string(r.out.join("round-0000/harness.jsonl")).unwrap();
    let mut pids = 0;
    for l in own.lines().filter(|l| l.contains("\"survivor\"")) {
        let v: Value = serde_json::from_str(l).unwrap();
        let pid = v["survivor_pid"].as_i64().unwrap();
        pids += 1;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(stat.is_empty() || stat.rsplit_once(')').unwrap().1.trim_start().starts_with('Z'), "{pid}: {stat}");
    }
    assert!(pids >= 1, "{own}");
    // and none was missed: no `sleep 301` left anywhere
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        assert!(!cmd.starts_with("/bin/sleep 301"), "pid {:?} still runs: {cmd}", e.file_name());
    }
}
