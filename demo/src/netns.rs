//! `--netns`: host A and host B in two network namespaces joined by a veth
//! pair with a private /30 that exists only inside those namespaces, so the
//! checkpoint shipping really crosses a (virtual) wire between hosts.
//!
//! Needs root and iproute2's `ip`. Everything created is removed on drop
//! (deleting a namespace deletes its end of the veth, which deletes the
//! pair).

use std::net::{Ipv4Addr, TcpListener};
use std::path::PathBuf;
use std::process::Command;

/// Which demo host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    A,
    B,
}

/// Two namespaces and the veth pair between them.
#[derive(Debug)]
pub struct NetNs {
    pub ns_a: String,
    pub ns_b: String,
    pub veth_a: String,
    pub veth_b: String,
    pub addr_a: Ipv4Addr,
    pub addr_b: Ipv4Addr,
    created: Vec<String>,
}

fn ip(args: &[&str]) -> anyhow::Result<String> {
    let out =
        Command::new("ip").args(args).output().map_err(|e| anyhow::anyhow!("running `ip {}`: {e}", args.join(" ")))?;
    if !out.status.success() {
        anyhow::bail!("`ip {}` failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).to_string())
}

/// Why `--netns` cannot run here, if it cannot.
pub fn preflight() -> anyhow::Result<()> {
    if !nix::unistd::geteuid().is_root() {
        anyhow::bail!(
            "--netns needs root (it creates network namespaces and a veth pair); run without --netns, or as root"
        );
    }
    match Command::new("ip").arg("-V").output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => anyhow::bail!("--netns: `ip -V` failed: {}", String::from_utf8_lossy(&o.stderr).trim()),
        Err(e) => anyhow::bail!("--netns needs iproute2's `ip` on PATH (apt-get install iproute2): {e}"),
    }
}

impl NetNs {
    /// Create both namespaces, the veth pair and its addresses. `tag`
    /// makes names unique per run (e.g. the demo's pid).
    pub fn create(tag: u32) -> anyhow::Result<NetNs> {
        preflight()?;
        // A /30 inside 10.213.0.0/16 picked from the tag: .1 is A, .2 is B.
        let block = (tag % 16_384) * 4;
        let (hi, lo) = ((block >> 8) as u8, (block & 0xff) as u8);
        let mut n = NetNs {
            ns_a: format!("dhpdemo-{tag}-a"),
            ns_b: format!("dhpdemo-{tag}-b"),
            veth_a: format!("dhpa{}", tag % 100_000_000),
            veth_b: format!("dhpb{}", tag % 100_000_000),
            addr_a: Ipv4Addr::new(10, 213, hi, lo + 1),
            addr_b: Ipv4Addr::new(10, 213, hi, lo + 2),
            created: Vec::new(),
        };
        n.setup().inspect_err(|_| n.cleanup())?;
        Ok(n)
    }

    fn setup(&mut self) -> anyhow::Result<()> {
        let (a, b) = (self.ns_a.clone(), self.ns_b.clone());
        ip(&["netns", "add", &a])?;
        self.created.push(a.clone());
        ip(&["netns", "add", &b])?;
        self.created.push(b.clone());
        ip(&["link", "add", &self.veth_a, "type", "veth", "peer", "name", &self.veth_b])?;
        ip(&["link", "set", &self.veth_a, "netns", &a])?;
        ip(&["link", "set", &self.veth_b, "netns", &b])?;
        ip(&["-n", &a, "addr", "add", &format!("{}/30", self.addr_a), "dev", &self.veth_a])?;
        ip(&["-n", &b, "addr", "add", &format!("{}/30", self.addr_b), "dev", &self.veth_b])?;
        for (ns, dev) in [(&a, &self.veth_a), (&b, &self.veth_b)] {
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
        }
        Ok(())
    }

    pub fn name(&self, h: Host) -> &str {
        match h {
            Host::A => &self.ns_a,
            Host::B => &self.ns_b,
        }
    }

    /// Command prefix that runs a program inside host `h`'s namespace
    /// (`ip netns exec` execs in place: the pid is the program's).
    pub fn exec_prefix(&self, h: Host) -> Vec<String> {
        vec!["ip".into(), "netns".into(), "exec".into(), self.name(h).to_string()]
    }

    /// A `127.0.0.1:0` listener inside host `h`'s namespace (bound from a
    /// short-lived thread that joined the namespace).
    pub fn loopback_listener(&self, h: Host) -> anyhow::Result<TcpListener> {
        let path = PathBuf::from("/run/netns").join(self.name(h));
        std::thread::spawn(move || -> anyhow::Result<TcpListener> {
            let f = std::fs::File::open(&path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            nix::sched::setns(&f, nix::sched::CloneFlags::CLONE_NEWNET)
                .map_err(|e| anyhow::anyhow!("setns {}: {e}", path.display()))?;
            Ok(TcpListener::bind("127.0.0.1:0")?)
        })
        .join()
        .map_err(|_| anyhow::anyhow!("netns listener thread panicked"))?
    }

    /// Packets and bytes host A's veth end sent and received.
    pub fn veth_a_stats(&self) -> Option<(u64, u64, u64, u64)> {
        let out = ip(&["-n", &self.ns_a, "-s", "-j", "link", "show", &self.veth_a]).ok()?;
        let v: serde_json::Value = serde_json::from_str(&out).ok()?;
        let st = v.get(0)?.get("stats64")?;
        let g = |k: &str, f: &str| st.get(k).and_then(|x| x.get(f)).and_then(serde_json::Value::as_u64);
        Some((g("tx", "packets")?, g("tx", "bytes")?, g("rx", "packets")?, g("rx", "bytes")?))
    }

    /// Remove everything created (idempotent).
    pub fn cleanup(&mut self) {
        for ns in self.created.drain(..).rev() {
            if let Err(e) = ip(&["netns", "del", &ns]) {
                eprintln!("demo: cleanup: {e}");
            }
        }
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        self.cleanup();
    }
}
