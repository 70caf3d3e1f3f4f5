//! The network of a pg_auto_failover cluster: a bridge `da<TAG>br` in the
//! root namespace (10.78.K.1, where the clients run) and a namespace
//! `dhpauto-<TAG>-<NODE>` per node on it through a veth pair
//! (`da<TAG><NODE>` / `eth0`): the monitor at 10.78.K.2, n0–n2 at K.3–K.5.
//! Partitions are iptables rules inside a node's namespace.

use super::sys::{self, Log};
use super::{DbError, Result};
use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

/// The nodes, the monitor first.
pub const ALL: [&str; 4] = ["mon", "n0", "n1", "n2"];

/// The namespace of `node` in the cluster tagged `tag`.
pub fn ns(tag: &str, node: &str) -> String {
    format!("dhpauto-{tag}-{node}")
}

/// The address of `node` on subnet `sub` (`10.78.K`).
pub fn ip(sub: &str, node: &str) -> Result<String> {
    let h = match node {
        "mon" => 2,
        "n0" => 3,
        "n1" => 4,
        "n2" => 5,
        _ => return Err(DbError::failed("naming a node", format!("no node {node:?} (mon, n0, n1, n2)"))),
    };
    Ok(format!("{sub}.{h}"))
}

/// The first `10.78.K` (K in 1..=250) no interface of `ip -o addr show` uses.
pub fn pick_subnet(addrs: &str) -> Option<String> {
    (1..=250).map(|k| format!("10.78.{k}")).find(|s| !addrs.contains(&format!(" {s}.1/")))
}

/// pg_hba.conf: `local` trusted (the socket directory is the owner's);
/// pg_auto_failover's roles from the namespaces (K.2–K.5) only; from K.1,
/// the root namespace, `postgres` with the password or nobody.
pub fn hba(sub: &str) -> String {
    let mut s = String::from("local all all trust\n");
    for h in 2..=5 {
        s.push_str(&format!("host pg_auto_failover autoctl_node {sub}.{h}/32 trust\n"));
        s.push_str(&format!("host all pgautofailover_monitor {sub}.{h}/32 trust\n"));
        s.push_str(&format!("host replication pgautofailover_replicator {sub}.{h}/32 trust\n"));
        s.push_str(&format!("host all pgautofailover_replicator {sub}.{h}/32 trust\n"));
    }
    s.push_str(&format!("host all postgres {sub}.0/24 scram-sha-256\n"));
    s
}

/// The iptables rules (`-A …`) that cut `cut` on a node's `eth0`; `mon` the monitor's address.
pub fn cut_rules(cut: super::Cut, mon: &str) -> [Vec<String>; 2] {
    let v = |s: &[&str]| s.iter().map(|x| (*x).to_string()).collect::<Vec<_>>();
    match cut {
        super::Cut::All => [v(&["INPUT", "-i", "eth0", "-j", "DROP"]), v(&["OUTPUT", "-o", "eth0", "-j", "DROP"])],
        super::Cut::Monitor => [
            v(&["INPUT", "-i", "eth0", "-s", mon, "-j", "DROP"]),
            v(&["OUTPUT", "-o", "eth0", "-d", mon, "-j", "DROP"]),
        ],
    }
}

/// `ip ARGS`.
pub fn ip_cmd<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Command {
    let mut c = Command::new("ip");
    c.args(args);
    c
}

/// `ip netns exec NS ARGV`.
pub fn in_ns<S: AsRef<std::ffi::OsStr>>(ns: &str, argv: &[S]) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns]);
    c.args(argv);
    c
}

/// Run `ip ARGS` (a step of the setup).
pub fn ip_run(args: &[&str]) -> Result<()> {
    sys::run(ip_cmd(args), &format!("ip {}", args.join(" ")), &Log::default()).map(|_| ())
}

/// The bridge of `tag` at `sub.1`.
pub fn add_bridge(tag: &str, sub: &str) -> Result<()> {
    let br = format!("da{tag}br");
    ip_run(&["link", "add", &br, "type", "bridge"])?;
    ip_run(&["addr", "add", &format!("{sub}.1/24"), "dev", &br])?;
    ip_run(&["link", "set", &br, "up"])
}

/// `node`'s namespace, its veth pair on the bridge, its address.
pub fn add_ns(tag: &str, sub: &str, node: &str) -> Result<()> {
    let ns = ns(tag, node);
    let (veth, peer) = (format!("da{tag}{node}"), format!("dp{tag}{node}"));
    ip_run(&["netns", "add", &ns])?;
    ip_run(&["link", "add", &veth, "type", "veth", "peer", "name", &peer])?;
    ip_run(&["link", "set", &peer, "netns", &ns])?;
    let addr = format!("{}/24", ip(sub, node)?);
    for args in [
        vec!["link", "set", peer.as_str(), "name", "eth0"],
        vec!["addr", "add", addr.as_str(), "dev", "eth0"],
        vec!["link", "set", "eth0", "up"],
        vec!["link", "set", "lo", "up"],
    ] {
        let mut argv = vec!["ip"];
        argv.extend(args);
        sys::run(in_ns(&ns, &argv), &format!("ip netns exec {ns} {}", argv.join(" ")), &Log::default())?;
    }
    ip_run(&["link", "set", &veth, "master", &format!("da{tag}br")])?;
    ip_run(&["link", "set", &veth, "up"])
}

/// The pids in a namespace (`ip netns pids`); none when it is gone.
pub fn pids(ns: &str) -> Vec<i32> {
    let out = ip_cmd(&["netns", "pids", ns]).stderr(std::process::Stdio::null()).output();
    out.map(|o| String::from_utf8_lossy(&o.stdout).split_whitespace().filter_map(|p| p.parse().ok()).collect())
        .unwrap_or_default()
}

/// SIGKILL each of `pids`.
pub fn kill_all(pids: &[i32]) {
    for &p in pids {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), nix::sys::signal::Signal::SIGKILL);
    }
}

/// Are none of `pids` in /proc any more (reaped, not only dead)?
pub fn gone(pids: &[i32]) -> bool {
    pids.iter().all(|p| !Path::new(&format!("/proc/{p}")).exists())
}

/// The argv of `ip netns exec NS [setsid -f] runuser -u postgres -- env …
/// ARGV`: `ARGV` run as postgres in `node`'s namespace, pg_autoctl's
/// configuration and sockets under `dir/node`.
pub fn node_argv(dir: &Path, tag: &str, node: &str, pgbin: &Path, detach: bool, argv: &[OsString]) -> Vec<OsString> {
    let d = dir.join(node);
    let kv = |k: &str, v: &Path| {
        let mut s = OsString::from(k);
        s.push("=");
        s.push(v);
        s
    };
    let mut path = OsString::from("PATH=");
    path.push(pgbin);
    path.push(":/usr/bin:/bin");
    let mut v: Vec<OsString> = ["ip", "netns", "exec"].map(OsString::from).to_vec();
    v.push(ns(tag, node).into());
    if detach {
        v.extend(["setsid", "-f"].map(OsString::from));
    }
    v.extend(["runuser", "-u", "postgres", "--", "env"].map(OsString::from));
    v.push(path);
    v.push(kv("PG_CONFIG", &pgbin.join("pg_config")));
    v.push(kv("XDG_CONFIG_HOME", &d.join("cfg")));
    v.push(kv("XDG_DATA_HOME", &d.join("share")));
    v.push(kv("XDG_RUNTIME_DIR", &d.join("run")));
    v.push(kv("PGHOST", &d.join("sock")));
    v.push(kv("PG_REGRESS_SOCK_DIR", &d.join("sock")));
    v.extend(argv.iter().cloned());
    v
}
