//! `db-link` faults: a second fault-injecting proxy, between the workers
//! and the PostgreSQL server. Workers get the store URL with its
//! `host:port` rewritten to the proxy (credentials, database and `schema=`
//! kept); supervisors, the monitor and the export connect directly, so the
//! fault cuts the workers' links only. Every connection a worker opens
//! goes through it: its store connection and its liveness lock's.
//!
//! The injector switches one seeded toxic on (the `link` vocabulary, drawn
//! from the same stream) for a seeded 0.2–1.5 s; the history records it as
//! a `fault` of kind `db-link` (victim `db-link`) and its `link-heal`.

use super::link::LINK_SECONDS;
use super::*;
use crate::proxy::{Proxy, Toxic};

impl Driver<'_> {
    /// A PostgreSQL round whose mix has `db-link` faults: start the proxy in
    /// front of the server before any worker is spawned.
    pub(super) fn start_db_proxy(&mut self) -> Result<()> {
        let wanted = self.cfg.fault_mix.iter().any(|(k, w)| *k == FaultKind::DbLink && *w > 0.0);
        let Some(url) = self.cfg.pg_url.as_deref().filter(|_| wanted) else { return Ok(()) };
        let upstream = crate::pg::server_addr(url)?;
        // its own jitter stream: the shipping proxy's is `seed`
        let p = Proxy::start(upstream, self.cfg.seed ^ 0x5eed_5a17_0000_0db1, None)?;
        self.hist.record(
            "spawn",
            json!({"name": "db-proxy", "role": "proxy", "impl": "builtin", "port": p.addr().port(),
                   "upstream": upstream.to_string(), "upstream_port": upstream.port(), "link": "db-link"}),
        );
        self.db_proxy = Some(p);
        Ok(())
    }

    /// The ROOT a worker gets: through the database proxy when there is one.
    pub(super) fn worker_store_arg(&self) -> Result<String> {
        let root = self.store_arg();
        match &self.db_proxy {
            Some(p) => crate::pg::via_proxy(&root, p.addr()),
            None => Ok(root),
        }
    }

    /// Switch a seeded toxic on the workers' database link for a seeded
    /// time (replacing one still on). False without a database proxy.
    pub(super) fn inject_db_link(&mut self) -> bool {
        if self.db_proxy.is_none() {
            return false;
        }
        self.heal_db_link(true);
        let toxic = Toxic::draw(&mut self.rng);
        let (a, b) = LINK_SECONDS;
        let secs = self.rng.gen_range(a..=b);
        self.fault_id += 1;
        self.live.faults += 1;
        let t = hist::now();
        let mut conns = 0;
        if let Some(p) = &self.db_proxy {
            conns = p.open_connections();
            p.set(Some(toxic));
        }
        self.db_link_on = Some((self.fault_id, t + secs, toxic));
        self.hist.record_at(
            t,
            "fault",
            json!({"fault_id": self.fault_id, "kind": "db-link", "signal": "LINK", "victim": "db-link",
                   "role": "db-link", "toxic": toxic, "duration_s": secs, "connections": conns}),
        );
        true
    }

    /// Clear the database link's toxic once its time is up (or now, with `force`).
    pub(super) fn heal_db_link(&mut self, force: bool) {
        let Some((id, until, toxic)) = self.db_link_on else { return };
        if !force && hist::now() < until {
            return;
        }
        if let Some(p) = &self.db_proxy {
            p.set(None);
        }
        self.db_link_on = None;
        self.hist.record("link-heal", json!({"fault_id": id, "toxic": toxic, "link": "db-link"}));
    }
}
