//! An adapter that starts a long-running process of its own: when the
//! runner is done with the adapter it kills the adapter's whole process
//! group, so that grandchild does not outlive the run.
use crate::common::*;

#[test]
fn the_adapters_grandchildren_are_killed_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pids");
    let cmd = adapter(&format!("--spawn-grandchild '{}'", pidfile.display()));
    let run = conform(&["--impl", &cmd, "--format", "json", "--level", "core", "fencing"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let pids: Vec<u32> = std::fs::read_to_string(&pidfile).unwrap().lines().map(|l| l.parse().unwrap()).collect();
    assert!(!pids.is_empty());
    // reaped by init once killed; give it a moment
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while pids.iter().any(|p| alive(*p)) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let left: Vec<u32> = pids.iter().copied().filter(|p| alive(*p)).collect();
    for p in &left {
        // do not leave them behind when the test fails
        let _ = std::process::Command::new("kill").arg("-9").arg(p.to_string()).status();
    }
    assert!(left.is_empty(), "grandchildren still running: {left:?} of {pids:?}");
}
