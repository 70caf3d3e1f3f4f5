//! The multi-host round the `--hosts` tests share: N hosts, each a network
//! namespace (needs root: CI runs as root), a small round per host, one
//! nemesis schedule, and leases long enough for a loaded machine.

use super::bins::small_round_args;
use super::{run_chaos, Run};

/// What differs between the multi-host rounds.
pub struct Hosts<'a> {
    /// Number of hosts (`--hosts`).
    pub hosts: u32,
    /// `--seed`.
    pub seed: u64,
    /// Chunks per handoff (two handoffs per host).
    pub chunks: u32,
    /// `--nemesis`: the fault kinds.
    pub nemesis: &'a str,
    /// `--fault-interval`: seconds between faults, `MIN,MAX`.
    pub fault_interval: &'a str,
}

/// [`run_chaos`] of a multi-host round `h` with `extra` arguments: faults
/// for 20 s, 15 s of grace, and several hosts' processes on a shared
/// 2-core machine: a 2 s lease (0.4 s heartbeats, 5 missed), so load
/// alone does not orphan live workers.
pub fn run_hosts(name: &str, h: &Hosts<'_>, extra: &[&str]) -> Run {
    let mut args = vec!["--hosts".to_string(), h.hosts.to_string()];
    args.extend(small_round_args(h.seed, h.chunks));
    for a in [
        "--nemesis",
        h.nemesis,
        "--fault-interval",
        h.fault_interval,
        "--fault-seconds",
        "20",
        "--grace",
        "15",
        "--lease-interval",
        "0.4",
        "--lease-max-missed",
        "5",
    ] {
        args.push(a.to_string());
    }
    args.extend(extra.iter().map(|a| a.to_string()));
    run_chaos(name, &args.iter().map(String::as_str).collect::<Vec<_>>())
}
