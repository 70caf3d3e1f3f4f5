//! Store disk faults (`--store-disk SIZE`): the round's SQLite store
//! directory — the one its workers and supervisors share; under `--hosts`,
//! each host's own — is a tmpfs of SIZE mounted by the harness (root
//! only), and the `store-full` fault fills it with a ballast file until
//! `ENOSPC` for a seeded 0.3–2 s, then frees it.
//!
//! What SQLite does then is what is under test: a commit that must append
//! to the WAL fails with `SQLITE_FULL` and rolls back (dhp-core: a
//! `StoreError`, exit 11); a WAL checkpoint that must grow the database
//! file fails, so the WAL cannot restart and grows instead; writes that
//! fit in pages the WAL already has still commit. The
//! `no-torn-after-store-full` invariant checks what must hold anyway.
//!
//! I/O errors other than a full disk are not simulated: that needs a
//! device-mapper error target (`dm-error`, `dm-flakey`) on a loop device,
//! and these machines' kernels have no device-mapper driver. `--io-errors`
//! is refused with that reason ([`store_disk_checked`]).

use super::disk::{fill, parse_size_for, Tmpfs, BALLAST};
use super::*;

/// A store disk stays full for a duration uniform in this range (seconds).
const FULL_SECONDS: (f64, f64) = (0.3, 2.0);
/// Below this a store cannot hold its WAL (SQLite checkpoints it at 1000
/// pages, 4 MiB) next to the database: the round would fill it by itself.
const MIN_BYTES: u64 = 2 << 20;

/// The store's tmpfs and its current fill.
#[derive(Debug, Default)]
pub(super) struct StoreDisk {
    pub(super) tmpfs: Option<Tmpfs>,
    /// The disk is full: (fault id, when to free it).
    full: Option<(u64, f64)>,
}

impl StoreDisk {
    /// The store's disk is being kept full.
    pub(super) fn is_full(&self) -> bool {
        self.full.is_some()
    }
}

/// Check `--store-disk SIZE` (and refuse `--io-errors`) before a run
/// starts: the size in bytes, or `None` without the flag.
pub fn store_disk_checked(size: Option<&str>, sqlite_only: bool, io_errors: bool) -> Result<Option<u64>> {
    if io_errors {
        bail!("{}", io_errors_refusal());
    }
    let Some(size) = size else { return Ok(None) };
    let bytes = parse_size_for("--store-disk", size)?;
    if bytes < MIN_BYTES {
        bail!("--store-disk needs at least 2m: the store's WAL grows to about 4 MiB before SQLite checkpoints it, so a smaller disk fills by itself");
    }
    if !sqlite_only {
        bail!("--store-disk puts the SQLite store on a small disk; it does not apply to --store postgres");
    }
    if !nix::unistd::geteuid().is_root() {
        bail!("--store-disk mounts a tmpfs and needs root; refusing to run store disk faults without it (other faults run without --store-disk)");
    }
    Ok(Some(bytes))
}

/// Why `--io-errors` is refused, with what this machine lacks.
fn io_errors_refusal() -> String {
    let dm = std::fs::read_to_string("/proc/misc").is_ok_and(|m| m.contains("device-mapper"));
    format!(
        "--io-errors is not simulated: injecting I/O errors honestly needs a device-mapper error target (dm-error or dm-flakey) on a loop device under the store, {}; a full disk is simulated instead (--store-disk, --disk)",
        if dm {
            "and this harness does not drive one yet"
        } else {
            "and this kernel has no device-mapper driver (/proc/misc lists none)"
        }
    )
}

impl Driver<'_> {
    /// Mount the store's tmpfs before anything is dispatched into it.
    pub(super) fn mount_store_disk(&mut self) -> Result<()> {
        let Some(bytes) = self.cfg.store_disk_bytes else { return Ok(()) };
        let what = "--store-disk mounts a tmpfs for the SQLite store";
        self.store_disk.tmpfs = Some(Tmpfs::mount(&self.paths.store, bytes, what)?);
        self.hist.record("observe", json!({"what": "store-disk-mount", "bytes": bytes}));
        Ok(())
    }

    /// Fill the store's disk until `ENOSPC`. False without `--store-disk`.
    pub(super) fn inject_store_full(&mut self) -> bool {
        if self.store_disk.tmpfs.is_none() {
            return false;
        }
        self.heal_store(true);
        let (a, b) = FULL_SECONDS;
        let secs = self.rng.gen_range(a..=b);
        let (filled, err) = fill(&self.paths.store.join(BALLAST));
        self.fault_id += 1;
        self.live.faults += 1;
        let (db, wal) = self.store_sizes();
        let t = self.hist.record(
            "fault",
            json!({"fault_id": self.fault_id, "kind": "store-full", "signal": "DISK", "victim": "store-disk", "role": "disk",
                   "ballast_bytes": filled, "error": err, "duration_s": secs}),
        );
        self.hist.record(
            "observe",
            json!({"what": "store-full", "fault_id": self.fault_id, "ballast_bytes": filled, "db_bytes": db, "wal_bytes": wal}),
        );
        self.store_disk.full = Some((self.fault_id, t + secs));
        true
    }

    /// Free the store's disk once its time is up (or now, with `force`).
    pub(super) fn heal_store(&mut self, force: bool) {
        let Some((id, until)) = self.store_disk.full else { return };
        if force || hist::now() >= until {
            self.free_store(id, "time");
        }
    }

    /// Host death: a fill still on ends with the host (the ballast stands
    /// for a process of that host filling its disk).
    pub(super) fn free_store_on_death(&mut self) {
        if let Some((id, _)) = self.store_disk.full {
            self.free_store(id, "host-death");
        }
    }

    fn free_store(&mut self, id: u64, reason: &str) {
        // what the store's files grew to while the disk was full
        let (db, wal) = self.store_sizes();
        let _ = std::fs::remove_file(self.paths.store.join(BALLAST));
        self.store_disk.full = None;
        self.hist.record("disk-heal", json!({"fault_id": id, "reason": reason, "disk": "store"}));
        self.hist.record("observe", json!({"what": "store-heal", "fault_id": id, "db_bytes": db, "wal_bytes": wal}));
    }

    /// The sizes of `dhp.sqlite3` and its WAL now (0 for a missing file).
    fn store_sizes(&self) -> (u64, u64) {
        let len = |f: &str| std::fs::metadata(self.paths.store.join(f)).map_or(0, |m| m.len());
        (len("dhp.sqlite3"), len("dhp.sqlite3-wal"))
    }

    /// Unmount the store's tmpfs once every process is gone, keeping the
    /// store's files underneath for the checker and `analyze`. The
    /// monitor's own connections go first (an open file keeps the mount busy).
    pub(super) fn unmount_store_disk(&mut self) -> Result<()> {
        let Some(mut t) = self.store_disk.tmpfs.take() else { return Ok(()) };
        if let Some((id, _)) = self.store_disk.full {
            self.free_store(id, "end");
        }
        self.db = None;
        self.probe = None;
        t.unmount()
    }
}
