//! An adapter whose helper double-forks, leaves its session and clears its
//! environment (`(setsid env -i cmd &)`): neither the group kill, the tree
//! walk nor the environment marker reaches it; the run's cgroup, which
//! every adapter joins before it execs, does — the helper must not outlive
//! the run (issue 47 item 4).
use crate::common::*;

#[test]
fn a_helper_that_clears_its_environment_does_not_outlive_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("helper.pid");
    let wrapper = dir.path().join("adapter.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n(setsid env -i /bin/sh -c 'echo $$ >> \"{}\"; exec sleep 303' </dev/null >/dev/null 2>&1 &)\nexec {}\n",
            pidfile.display(),
            adapter("")
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let run = conform(&["--impl", &wrapper.display().to_string(), "--format", "json", "--level", "core", "fencing"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        !run.stderr.contains("environment marker only"),
        "cgroups are available here (root, a cgroup2 hierarchy with cgroup.kill)\n{}",
        run.stderr
    );
    let pids: Vec<u32> = std::fs::read_to_string(&pidfile).unwrap().lines().map(|l| l.parse().unwrap()).collect();
    assert!(!pids.is_empty());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while pids.iter().any(|p| alive(*p)) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let left: Vec<u32> = pids.iter().copied().filter(|p| alive(*p)).collect();
    for p in &left {
        let _ = std::process::Command::new("kill").arg("-9").arg(p.to_string()).status();
    }
    assert!(left.is_empty(), "helpers with a cleared environment still running after the run: {left:?} of {pids:?}");
}
