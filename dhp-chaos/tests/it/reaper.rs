//! The reaper reports every exit exactly once, whoever reaped the child.
//! A worker that kills itself (a failpoint) just before the injector picks
//! it is reaped inside `Proc::signal`; that exit used to be lost, so the
//! history had no death for it and `no-false-orphans` blamed its supervisor.

use dhp_chaos::procs::{self, Role, Spec, Table};
use nix::sys::signal::Signal;
use std::time::Duration;

fn zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('Z')))
        .unwrap_or(false)
}

#[test]
fn an_exit_reaped_by_a_signal_attempt_is_still_reported() {
    let logs = tempfile::tempdir().unwrap();
    let mut table = Table::default();
    // dies by SIGKILL from itself, like a failpoint
    let spec = Spec::service(
        "w1".into(),
        Role::Worker,
        "builtin",
        vec!["sh".into(), "-c".into(), "kill -9 $$".into()],
        vec![],
    );
    table.procs.push(procs::spawn(spec, logs.path()).unwrap());
    let pid = table.procs[0].pid;
    dhp_kit::wait_until(Duration::from_secs(10), "the child died", || zombie(pid));
    // the injector picks it: the signal finds it dead (and reaps it)
    assert!(!table.procs[0].signal(Signal::SIGKILL), "a dead child is not signalled");
    assert!(!table.procs[0].killed_by_harness);
    let exits = table.reap_exits();
    assert_eq!(exits.len(), 1, "the exit must still be reported: {exits:?}");
    assert_eq!(exits[0].1.signal, Some(9));
    assert!(table.reap_exits().is_empty(), "reported once");
}

#[test]
fn exits_reaped_at_teardown_are_reported() {
    let logs = tempfile::tempdir().unwrap();
    let mut table = Table::default();
    let spec = Spec::service("s1".into(), Role::Supervisor, "builtin", vec!["sleep".into(), "30".into()], vec![]);
    table.procs.push(procs::spawn(spec, logs.path()).unwrap());
    table.kill_all();
    let exits = table.reap_exits();
    assert_eq!(exits.len(), 1, "{exits:?}");
    assert_eq!(exits[0].1.signal, Some(9));
}
