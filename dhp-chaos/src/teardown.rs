//! Teardown on every exit path. What a run starts outside itself — child
//! process groups, network namespaces, bridges and veths, tmpfs mounts,
//! PostgreSQL clusters it owns — is registered here as it is made (and
//! struck off as it goes). On SIGINT, SIGTERM or SIGHUP ([`install`]) and
//! on a panic of the main thread, [`teardown_all`] ends and removes all of
//! it, and the process exits with 128 + the signal (130, 143, 129). The
//! ordinary paths tear down through the owners' `Drop` impls as before.
//!
//! Registration and teardown share one lock, and a new resource is made
//! under it ([`guarded`]): once teardown has begun nothing new is started,
//! so no child can slip in between the kill and the exit.

use anyhow::{bail, Result};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// What is live, to be torn down on an abnormal exit.
#[derive(Debug, Default)]
pub struct Registry {
    /// Process groups of children (each child leads its own).
    pub pgids: BTreeSet<i32>,
    /// Network interfaces in the root namespace (bridges, veth ends).
    pub links: BTreeSet<String>,
    /// Network namespaces.
    pub netns: BTreeSet<String>,
    /// tmpfs mount points.
    pub mounts: BTreeSet<PathBuf>,
    /// Owned PostgreSQL databases: (layout, directory).
    pub clusters: BTreeSet<(crate::db::Kind, PathBuf)>,
}

static LIVE: Mutex<Registry> = Mutex::new(Registry {
    pgids: BTreeSet::new(),
    links: BTreeSet::new(),
    netns: BTreeSet::new(),
    mounts: BTreeSet::new(),
    clusters: BTreeSet::new(),
});
/// Teardown has begun: nothing new starts, and the process is about to exit.
static CLOSING: AtomicBool = AtomicBool::new(false);

fn live() -> MutexGuard<'static, Registry> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Make and register a resource under the registry's lock; refused once
/// teardown has begun.
pub fn guarded<T>(make: impl FnOnce(&mut Registry) -> Result<T>) -> Result<T> {
    let mut r = live();
    if CLOSING.load(Ordering::SeqCst) {
        bail!("dhp-chaos is shutting down (interrupted): not starting anything new");
    }
    make(&mut r)
}

/// Strike a resource off (it was torn down the ordinary way).
pub fn forget(f: impl FnOnce(&mut Registry)) {
    f(&mut live());
}

/// Teardown has begun (a signal or a panic).
pub fn closing() -> bool {
    CLOSING.load(Ordering::SeqCst)
}

/// End and remove everything registered: SIGCONT + SIGKILL every child
/// group, unmount, delete links and namespaces, stop owned clusters.
/// Nothing new starts afterwards.
pub fn teardown_all() {
    CLOSING.store(true, Ordering::SeqCst);
    tear(&mut live());
}

fn tear(r: &mut Registry) {
    for &g in &r.pgids {
        if let Ok(g) = u32::try_from(g) {
            dhp_procs::kill_group(g);
        }
    }
    r.pgids.clear();
    // descendants that left the groups (setsid, double fork)
    crate::survivors::sweep_all();
    let quiet = |prog: &str, args: &[&std::ffi::OsStr]| {
        let _ = std::process::Command::new(prog)
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    };
    for m in std::mem::take(&mut r.mounts) {
        quiet("umount", &["-l".as_ref(), m.as_os_str()]);
    }
    for l in std::mem::take(&mut r.links) {
        quiet("ip", &["link".as_ref(), "del".as_ref(), l.as_ref()]);
    }
    for n in std::mem::take(&mut r.netns) {
        quiet("ip", &["netns".as_ref(), "del".as_ref(), n.as_ref()]);
    }
    for (kind, dir) in std::mem::take(&mut r.clusters) {
        kind.teardown(&dir);
    }
}

/// Exit with `code` — unless teardown has begun on another thread, which
/// exits the process itself once it is done (so an error the interruption
/// caused here cannot end the process before its children are gone).
pub fn exit(code: i32) -> ! {
    if closing() {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
    }
    // a round that ended in a harness error was not swept: no descendant outlives the run
    crate::survivors::sweep_all();
    std::process::exit(code)
}

/// Tear down on SIGINT, SIGTERM and SIGHUP (then exit 128 + the signal),
/// and on a panic of the main thread (then the panic goes on as before).
pub fn install() -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new().name("teardown".into()).spawn(move || {
        if let Some(sig) = signals.forever().next() {
            eprintln!("dhp-chaos: signal {sig}: tearing down every process, namespace, mount and cluster of the run");
            teardown_all();
            std::process::exit(128 + sig);
        }
    })?;
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        previous(info);
        if std::thread::current().name() == Some("main") {
            CLOSING.store(true, Ordering::SeqCst);
            // not if this thread holds the lock (it panicked making a resource)
            match LIVE.try_lock() {
                Ok(mut r) => tear(&mut r),
                Err(std::sync::TryLockError::Poisoned(e)) => tear(&mut e.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => {}
            }
        }
    }));
    Ok(())
}
