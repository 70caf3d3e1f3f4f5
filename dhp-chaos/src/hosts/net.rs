//! The simulated hosts' network: one network namespace per host, each with
//! a veth pair to a bridge in the root namespace and its own address
//! (10.77.0.K+1/24). Made at round start, torn down when [`Net`] is dropped
//! (also on a panic); namespaces left behind by a harness that was killed
//! are removed at the next start ([`cleanup_stale`]).

use anyhow::{bail, Context, Result};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// Every namespace this harness makes is named `dhpchaos-PID-X-hK`.
pub const NS_PREFIX: &str = "dhpchaos-";
/// Bridges are named `dhpcPIDX`.
const BR_PREFIX: &str = "dhpc";
/// The subnet of the hosts: host K is 10.77.0.(K+1).
const SUBNET: &str = "10.77.0";

/// One simulated host's network identity.
#[derive(Debug, Clone)]
pub struct HostNet {
    /// The network namespace its processes run in (named with [`NS_PREFIX`]).
    pub netns: String,
    /// Its address on the bridge (host K is 10.77.0.(K+1)).
    pub addr: String,
    /// The veth end on the bridge (in the root namespace).
    veth: String,
}

/// The file of a namespace `ip netns add` made (what `setns` opens).
pub fn netns_path(netns: &str) -> std::path::PathBuf {
    std::path::Path::new("/run/netns").join(netns)
}

/// The hosts' namespaces and bridge; removed on drop.
#[derive(Debug)]
pub struct Net {
    bridge: String,
    /// `PIDX`: names this net's namespaces and links apart from others'.
    tag: String,
    /// The hosts' identities, host K at index K (a standby replaces the host it took over).
    pub hosts: Vec<HostNet>,
}

/// Run a command, failing with its stderr.
pub(crate) fn sh(argv: &[&str]) -> Result<String> {
    let (prog, args) = argv.split_first().context("empty command")?;
    let out = Command::new(prog).args(args).output().with_context(|| format!("running {}", argv.join(" ")))?;
    if !out.status.success() {
        bail!("{} failed: {}", argv.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Run a command inside a namespace.
pub(crate) fn in_ns(ns: &str, argv: &[&str]) -> Result<String> {
    let mut v = vec!["ip", "netns", "exec", ns];
    v.extend_from_slice(argv);
    sh(&v)
}

/// Can this machine simulate hosts? Needs root, `ip netns` and iptables.
/// Never pretends: the error says what is missing.
pub fn check_support() -> Result<()> {
    if !nix::unistd::geteuid().is_root() {
        bail!("--hosts needs root (network namespaces, veth pairs and iptables rules); run as root, or run without --hosts (process faults work as before)");
    }
    sh(&["ip", "netns", "list"])
        .context("--hosts needs `ip netns` (iproute2) and network namespace support; not available here")?;
    if sh(&["iptables", "-V"]).is_err() {
        // installs belong to the project's setup script, not to the harness
        bail!("--hosts needs iptables for partitions, and it is missing: install Debian's iptables (the project's scripts/services.sh does, as root)");
    }
    Ok(())
}

/// Remove the namespaces and bridges of harnesses that are no longer
/// running (killed before their teardown ran). Those of live harnesses
/// are left alone.
pub fn cleanup_stale() {
    let alive = |pid: &str| !pid.is_empty() && std::path::Path::new(&format!("/proc/{pid}")).exists();
    if let Ok(list) = sh(&["ip", "netns", "list"]) {
        for ns in list.lines().filter_map(|l| l.split_whitespace().next()) {
            let Some(rest) = ns.strip_prefix(NS_PREFIX) else { continue };
            let pid = rest.split('-').next().unwrap_or("");
            if !alive(pid) {
                let _ = sh(&["ip", "netns", "del", ns]);
            }
        }
    }
    if let Ok(list) = sh(&["ip", "-o", "link", "show", "type", "bridge"]) {
        for name in list.lines().filter_map(|l| l.split(':').nth(1)).map(str::trim) {
            let Some(rest) = name.strip_prefix(BR_PREFIX) else { continue };
            let pid: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if !alive(&pid) {
                let _ = sh(&["ip", "link", "del", name]);
            }
        }
    }
}

/// A host's namespace and veth are gone: off the teardown registry.
fn forget_host(netns: &str, veth: &str) {
    crate::teardown::forget(|r| {
        r.netns.remove(netns);
        r.links.remove(veth);
    });
}

static NEXT: AtomicU32 = AtomicU32::new(0);

impl Net {
    /// Make `n` host namespaces on a fresh bridge.
    pub fn create(n: u32) -> Result<Net> {
        let pid = std::process::id();
        let x = char::from(b'a' + (NEXT.fetch_add(1, Ordering::SeqCst) % 26) as u8);
        let bridge = format!("{BR_PREFIX}{pid}{x}");
        let mut net = Net { bridge: bridge.clone(), tag: format!("{pid}-{x}"), hosts: Vec::new() };
        crate::teardown::guarded(|r| {
            sh(&["ip", "link", "add", &bridge, "type", "bridge"])?;
            r.links.insert(bridge.clone());
            Ok(())
        })?;
        sh(&["ip", "link", "set", &bridge, "up"])?;
        for k in 0..n {
            let h = net.add_host(k, "")?;
            net.hosts.push(h);
        }
        Ok(net)
    }

    /// A namespace for host `k` (`suffix` "s" for a standby) on the bridge,
    /// with host k's address.
    fn add_host(&self, k: u32, suffix: &str) -> Result<HostNet> {
        let ns = if suffix.is_empty() { format!("{NS_PREFIX}{}-h{k}", self.tag) } else { self.standby_netns(k) };
        let short = self.tag.replace('-', "");
        let (outer, inner) = (format!("dv{short}{k}{suffix}"), format!("dp{short}{k}{suffix}"));
        let addr = format!("{SUBNET}.{}", k + 1);
        crate::teardown::guarded(|r| {
            sh(&["ip", "netns", "add", &ns])?;
            r.netns.insert(ns.clone());
            Ok(())
        })?;
        let h = HostNet { netns: ns.clone(), addr: addr.clone(), veth: outer.clone() };
        let made = (|| -> Result<()> {
            crate::teardown::guarded(|r| {
                sh(&["ip", "link", "add", &outer, "type", "veth", "peer", "name", &inner])?;
                r.links.insert(outer.clone());
                Ok(())
            })?;
            sh(&["ip", "link", "set", &inner, "netns", &ns])?;
            in_ns(&ns, &["ip", "link", "set", &inner, "name", "eth0"])?;
            in_ns(&ns, &["ip", "addr", "add", &format!("{addr}/24"), "dev", "eth0"])?;
            in_ns(&ns, &["ip", "link", "set", "eth0", "up"])?;
            in_ns(&ns, &["ip", "link", "set", "lo", "up"])?;
            sh(&["ip", "link", "set", &outer, "master", &self.bridge])?;
            sh(&["ip", "link", "set", &outer, "up"])?;
            Ok(())
        })();
        if let Err(e) = made {
            let _ = sh(&["ip", "link", "del", &outer]);
            let _ = sh(&["ip", "netns", "del", &ns]);
            forget_host(&ns, &outer);
            return Err(e);
        }
        Ok(h)
    }

    /// The namespace a standby for host `k` gets.
    pub fn standby_netns(&self, k: u32) -> String {
        format!("{NS_PREFIX}{}-h{k}s", self.tag)
    }

    /// Host `k` died: its namespace goes, and a standby namespace takes
    /// over its address (its peers keep shipping to the same address).
    pub fn replace(&mut self, k: u32) -> Result<&HostNet> {
        let old = &self.hosts[k as usize];
        // the veth pair first: a socket still open in the old namespace (a
        // proxy thread finishing) keeps the namespace alive after `netns
        // del`, and with it an interface holding host k's address on the
        // bridge; deleting our end deletes both
        let _ = sh(&["ip", "link", "del", &old.veth]);
        sh(&["ip", "netns", "del", &old.netns])?;
        forget_host(&old.netns, &old.veth);
        let h = self.add_host(k, "s")?;
        self.hosts[k as usize] = h;
        Ok(&self.hosts[k as usize])
    }

    fn teardown(&mut self) {
        for h in self.hosts.drain(..) {
            // the pair goes with either end; deleted first for the reason in `replace`
            let _ = sh(&["ip", "link", "del", &h.veth]);
            let _ = sh(&["ip", "netns", "del", &h.netns]);
            forget_host(&h.netns, &h.veth);
        }
        let _ = sh(&["ip", "link", "del", &self.bridge]);
        let bridge = self.bridge.clone();
        crate::teardown::forget(|r| {
            r.links.remove(&bridge);
        });
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        self.teardown();
    }
}
