//! Link faults: the fault-injecting proxy between the shippers and the
//! `dhp transport` server, and the seeded toxics the injector switches on
//! (and off again after a seeded duration).

use super::*;
use crate::proxy::{Proxy, Toxic};

/// A toxic stays on for a duration uniform in this range (seconds).
pub(super) const LINK_SECONDS: (f64, f64) = (0.2, 1.5);

impl Driver<'_> {
    /// Start the proxy in front of the transport server (whose port is
    /// known). Under `--hosts` it runs inside the host's own network
    /// namespace, where the host's shippers reach it on 127.0.0.1, and
    /// forwards over the bridge to the peer host's server — so a partition
    /// between the hosts (iptables in their namespaces) cuts proxied
    /// traffic as it would a direct connection.
    pub(super) fn start_proxy(&mut self) -> Result<()> {
        let (p, upstream) = match &self.cfg.host {
            Some(h) => {
                let upstream: std::net::SocketAddr =
                    h.ship_to.parse().with_context(|| format!("peer address {:?}", h.ship_to))?;
                let ns = crate::hosts::net::netns_path(&h.netns);
                (Proxy::start_in(Some(&ns), upstream, self.cfg.seed, Some(&self.paths.proxy_record))?, upstream)
            }
            None => {
                let port = self.port.context("transport server port unknown")?;
                let upstream = std::net::SocketAddr::from(([127, 0, 0, 1], port));
                (Proxy::start(upstream, self.cfg.seed, Some(&self.paths.proxy_record))?, upstream)
            }
        };
        self.hist.record(
            "spawn",
            json!({"name": "proxy", "role": "proxy", "impl": "builtin", "port": p.addr().port(),
                   "upstream": upstream.to_string(), "upstream_port": upstream.port(),
                   "netns": self.cfg.host.as_ref().map(|h| &h.netns)}),
        );
        self.proxy = Some(p);
        Ok(())
    }

    /// Host death: the proxy dies with the host (a toxic still on ends with
    /// it); the standby starts its own in its namespace.
    pub(super) fn stop_proxy(&mut self) {
        self.heal_link(true);
        self.proxy = None;
    }

    /// Where workers ship: the proxy, or the server itself without one.
    pub(super) fn ship_addr(&self) -> Result<String> {
        match (&self.proxy, &self.cfg.host) {
            (Some(p), _) => Ok(p.addr().to_string()),
            // no proxy (not started yet): straight to the peer host's server
            (None, Some(h)) => Ok(h.ship_to.clone()),
            (None, None) => Ok(format!("127.0.0.1:{}", self.port.context("transport server port unknown")?)),
        }
    }

    /// Switch a seeded toxic on for a seeded time (replacing one still on).
    /// Returns false when there is no proxy (no TCP shipping).
    pub(super) fn inject_link(&mut self) -> bool {
        if self.proxy.is_none() {
            return false;
        }
        self.heal_link(true);
        let toxic = Toxic::draw(&mut self.rng);
        let (a, b) = LINK_SECONDS;
        let secs = self.rng.gen_range(a..=b);
        self.fault_id += 1;
        self.live.faults += 1;
        let t = hist::now();
        if let Some(p) = &self.proxy {
            p.set(Some(toxic));
        }
        self.link_on = Some((self.fault_id, t + secs, toxic));
        self.hist.record_at(
            t,
            "fault",
            json!({"fault_id": self.fault_id, "kind": "link", "signal": "LINK", "victim": "proxy", "role": "link",
                   "toxic": toxic, "duration_s": secs}),
        );
        true
    }

    /// Clear the toxic once its time is up (or now, with `force`).
    pub(super) fn heal_link(&mut self, force: bool) {
        let Some((id, until, toxic)) = self.link_on else { return };
        if !force && hist::now() < until {
            return;
        }
        if let Some(p) = &self.proxy {
            p.set(None);
        }
        self.link_on = None;
        self.hist.record("link-heal", json!({"fault_id": id, "toxic": toxic}));
    }
}
