//! Host and network faults are refused clearly where they cannot run, and
//! nemesis combinations that cannot run are refused by name.
use crate::common::*;

#[test]
fn network_faults_are_refused_where_they_cannot_run() {
    let r = run_chaos("no-hosts-partition", &["--faults", "partition=1", "--handoffs", "1"]);
    assert_eq!(r.code, 2, "{}", r.dump());
    assert!(r.stderr.contains("partitions and host death need --hosts N"), "{}", r.dump());

    let r = run_chaos("one-host", &["--hosts", "1"]);
    assert_eq!(r.code, 2, "{}", r.dump());
    assert!(r.stderr.contains("at least 2 hosts"), "{}", r.dump());

    let r = run_chaos("nemesis-link-file", &["--nemesis", "kill,link"]);
    assert_eq!(r.code, 2, "{}", r.dump());
    assert!(r.stderr.contains("link faults act on the TCP link"), "{}", r.dump());
    let r = run_chaos("nemesis-unknown", &["--nemesis", "meteor"]);
    assert_eq!(r.code, 2, "{}", r.dump());
    assert!(r.stderr.contains("unknown nemesis \"meteor\""), "{}", r.dump());

    let r = run_chaos("lose-unsynced", &["--hosts", "2", "--nemesis", "host", "--lose-unsynced"]);
    assert_eq!(r.code, 2, "{}", r.dump());
    assert!(r.stderr.contains("--lose-unsynced is not simulated"), "{}", r.dump());

    let r = run_chaos("hosts-python", &["--hosts", "2", "--workers", "python"]);
    assert_eq!(r.code, 2, "{}", r.dump());
    assert!(r.stderr.contains("need builtin workers"), "{}", r.dump());
}
