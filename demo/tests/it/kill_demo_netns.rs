//! `--netns`: as root with iproute2, host A and host B live in two network
//! namespaces joined by a veth pair and the checkpoints cross it over TCP;
//! the run must be green, with traffic on the veth, and leave no namespace
//! behind. Without root (or without `ip`) the demo must refuse with a clear
//! error and exit 2.

use crate::common;

use std::process::Command;

fn ip_available() -> bool {
    Command::new("ip").arg("-V").output().map(|o| o.status.success()).unwrap_or(false)
}

fn our_namespaces() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().map(|o| o.stdout).unwrap_or_default();
    String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with("dhpdemo-"))
        .map(str::to_string)
        .collect()
}

#[test]
fn netns_run_crosses_a_veth_or_refuses_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    let seed = 31;
    let root = nix::unistd::geteuid().is_root();
    let r = common::run_demo(tmp.path(), seed, &["--netns"]);
    if !(root && ip_available()) {
        assert_eq!(r.code, 2, "{}", r.stderr);
        // A refusal is a usage error, not a verdict on the protocol.
        assert!(r.summary.get("verdict").is_none(), "{}", r.summary);
        assert!(r.stderr.contains("demo: usage: "), "{}", r.stderr);
        let why = r.summary["usage_error"].as_str().unwrap();
        assert!(why.contains("--netns needs"), "{why}");
        eprintln!("not root or no `ip`: checked the refusal only ({why})");
        return;
    }
    common::check_green_run(&r, seed);
    let net = &r.summary["network"];
    let (a, b) = (net["addr_a"].as_str().unwrap(), net["addr_b"].as_str().unwrap());
    assert!(a.starts_with("10.213.") && b.starts_with("10.213."), "{net}");
    assert_eq!(r.summary["transport"]["addr"], format!("{b}:8471"), "worker-A shipped to host B's veth address");
    let veth = &r.summary["veth_a"];
    assert!(veth["tx_bytes"].as_u64().unwrap() > 10_000, "checkpoints crossed the veth: {veth}");
    assert!(veth["rx_packets"].as_u64().unwrap() >= 20, "acks came back over the veth: {veth}");
    // Cleaned up: the run's namespaces are gone (deletion is synchronous for the name).
    let ns_a = net["ns_a"].as_str().unwrap().to_string();
    let after = our_namespaces();
    assert!(!after.contains(&ns_a), "namespace {ns_a} left behind: {after:?}");
}
