//! `--scenario` refuses what it cannot run, before anything starts: an
//! unknown scenario, flags of the random fault mix, too few checkpoints for
//! a kill with work on both sides, mixed workers. Exit 2, nothing created.
use crate::common::*;

#[test]
fn net_chaos_refuses_what_it_cannot_run() {
    let cases: [(&[&str], &str); 6] = [
        (&["--scenario", "bogus"], "unknown scenario \"bogus\""),
        (&["--scenario", "net-chaos", "--rounds", "2"], "not with --rounds"),
        (&["--scenario", "net-chaos", "--faults", "kill-worker=1"], "its own fault script"),
        (&["--scenario", "net-chaos", "--net-checkpoints", "2"], "--net-checkpoints must be at least 3"),
        (&["--scenario", "net-chaos", "--net-rounds", "0"], "--net-rounds must be at least 1"),
        (&["--scenario", "net-chaos", "--workers", "mixed"], "not mixed"),
    ];
    for (i, (args, msg)) in cases.iter().enumerate() {
        let r = run_chaos(&format!("netchaos-refuse-{i}"), args);
        assert_eq!(r.code, 2, "{args:?}\n{}", r.dump());
        assert!(r.stderr.contains(msg), "{args:?} should say {msg:?}\n{}", r.dump());
        assert!(!r.out.exists(), "{args:?} created {}", r.out.display());
    }
}
