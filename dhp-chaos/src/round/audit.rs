//! Installing the store audit (`crate::audit`) before any process under test starts.

use super::Driver;
use anyhow::{Context, Result};
use serde_json::json;

impl Driver<'_> {
    /// Install the audit triggers and table in the round's store (after
    /// `dhp dispatch` or `dhp ingest` created it, before the first worker or
    /// supervisor). Recorded in the history with the time it took.
    pub(super) fn install_audit(&mut self) -> Result<()> {
        if !self.cfg.audit {
            self.hist.record("observe", json!({"what": "audit-off"}));
            return Ok(());
        }
        let t = std::time::Instant::now();
        match &self.cfg.pg_url {
            Some(url) => {
                let mut c = crate::pg::connect(url, &self.cfg.pg_schema(), std::time::Duration::from_secs(5))?;
                crate::audit::install_pg(&mut c)?;
            }
            None => crate::audit::install_sqlite(&self.paths.store.join("dhp.sqlite3"))
                .context("installing the store audit")?,
        }
        let engine = if self.cfg.pg_url.is_some() { "postgres" } else { "sqlite" };
        self.hist.record(
            "observe",
            json!({"what": "audit-installed", "engine": engine, "seconds": t.elapsed().as_secs_f64()}),
        );
        Ok(())
    }
}
