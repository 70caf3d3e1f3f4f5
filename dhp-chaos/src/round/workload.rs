//! Starting the harness's workload service for a round (`src/workload/`):
//! on loopback, or on loopback inside the host's network namespace under
//! `--hosts`, so that only the round's own workers reach it.

use super::*;
use std::net::TcpListener;

impl Driver<'_> {
    /// Start the service (once) before the first worker is spawned.
    pub(super) fn start_workload(&mut self) -> Result<()> {
        if !self.cfg.workload || self.workload.is_some() {
            return Ok(());
        }
        let listener = match &self.cfg.host {
            None => TcpListener::bind("127.0.0.1:0").context("binding the workload service")?,
            Some(h) => bind_in_netns(&h.netns)?,
        };
        let svc = crate::workload::Service::start(listener, self.tasks.clone(), &self.paths.dir)?;
        self.hist.record("observe", json!({"what": "workload-service", "url": svc.url()}));
        self.workload = Some(svc);
        Ok(())
    }
}

/// A loopback listener in network namespace `netns` (`ip netns` names it
/// under /var/run/netns): bound from a thread that joined the namespace, so
/// the harness's other threads stay where they are. The socket keeps its
/// namespace wherever it is used from.
fn bind_in_netns(netns: &str) -> Result<TcpListener> {
    let path = std::path::Path::new("/var/run/netns").join(netns);
    let ns = std::fs::File::open(&path).with_context(|| format!("opening {}", path.display()))?;
    std::thread::spawn(move || -> Result<TcpListener> {
        nix::sched::setns(&ns, nix::sched::CloneFlags::CLONE_NEWNET).context("joining the host's network namespace")?;
        TcpListener::bind("127.0.0.1:0").context("binding the workload service in the host's namespace")
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the workload service's bind thread panicked"))?
}
