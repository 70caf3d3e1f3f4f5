//! Disk faults (`--disk SIZE`): the transport server's log directory is a
//! tmpfs of SIZE mounted by the harness (root only), and the `disk-full`
//! fault fills it with a ballast file until `ENOSPC`, then frees it after
//! a seeded 0.2–1.5 s. The server must refuse, never ack, what it cannot
//! write (the peer-acks invariant). A `dhp transport` whose journal failed
//! exits so a process manager restarts it (docs/transport.md); one still
//! up then is killed after freeing the space and restarted, as an operator
//! would (recorded as `disk-restart`).

use super::*;

/// The ballast file that fills the disk (not a log: the checker and the
/// server's recovery look at `<hid>.log` and journal files only).
pub(super) const BALLAST: &str = "ballast.fill";
/// A disk stays full for a duration uniform in this range (seconds).
const FULL_SECONDS: (f64, f64) = (0.2, 1.5);

/// A tmpfs mounted over a directory; unmounted (contents kept) on drop.
#[derive(Debug)]
pub(super) struct Tmpfs {
    path: PathBuf,
    mounted: bool,
}

/// `256k`, `4m`, `65536` → bytes (at least one page, at most 1 GiB).
pub fn parse_size(s: &str) -> Result<u64> {
    parse_size_for("--disk", s)
}

/// [`parse_size`], naming `flag` in its errors.
pub(super) fn parse_size_for(flag: &str, s: &str) -> Result<u64> {
    let s = s.trim().to_ascii_lowercase();
    let (num, mult) = match s.chars().last() {
        Some('k') => (&s[..s.len() - 1], 1024),
        Some('m') => (&s[..s.len() - 1], 1024 * 1024),
        _ => (s.as_str(), 1),
    };
    let n: u64 = num.parse().with_context(|| format!("{flag} wants a size like 256k or 4m, not {s:?}"))?;
    let bytes = n.saturating_mul(mult);
    if !(4096..=1 << 30).contains(&bytes) {
        bail!("{flag} size must be between 4k and 1024m");
    }
    Ok(bytes)
}

impl Tmpfs {
    /// Mount a tmpfs of `bytes` over `path` (created if missing), for
    /// `what` (`--disk mounts a tmpfs for WHAT`, in the refusal). Root only.
    pub(super) fn mount(path: &Path, bytes: u64, what: &str) -> Result<Tmpfs> {
        if !nix::unistd::geteuid().is_root() {
            bail!("{what} and needs root; refusing to run disk faults without it");
        }
        std::fs::create_dir_all(path)?;
        crate::teardown::guarded(|r| {
            let st = std::process::Command::new("mount")
                .args(["-t", "tmpfs", "-o", &format!("size={bytes},mode=0755"), "dhp-chaos-disk"])
                .arg(path)
                .status()
                .context("running mount")?;
            if !st.success() {
                bail!("mount -t tmpfs on {} failed ({st})", path.display());
            }
            r.mounts.insert(path.to_path_buf());
            Ok(())
        })?;
        Ok(Tmpfs { path: path.to_path_buf(), mounted: true })
    }

    /// Unmount, keeping the logs: read out, unmount, written back to the
    /// directory underneath (the checker and `analyze` read them there).
    pub(super) fn unmount(&mut self) -> Result<()> {
        if !self.mounted {
            return Ok(());
        }
        let _ = std::fs::remove_file(self.path.join(BALLAST));
        let mut files = Vec::new();
        for e in std::fs::read_dir(&self.path)? {
            let e = e?;
            if e.file_type()?.is_file() {
                files.push((e.file_name(), std::fs::read(e.path())?));
            }
        }
        let st = std::process::Command::new("umount").arg(&self.path).status().context("running umount")?;
        if !st.success() {
            bail!("umount {} failed ({st})", self.path.display());
        }
        self.mounted = false;
        crate::teardown::forget(|r| {
            r.mounts.remove(&self.path);
        });
        for (name, data) in files {
            std::fs::write(self.path.join(name), data)?;
        }
        Ok(())
    }
}

/// Append zeros to the ballast file at `path` until a write fails
/// (`ENOSPC` on a full tmpfs): the bytes written and the error.
pub(super) fn fill(path: &Path) -> (u64, String) {
    let mut filled = 0u64;
    let err = match std::fs::OpenOptions::new().create(true).append(true).open(path) {
        Ok(mut f) => {
            use std::io::Write;
            let page = [0u8; 4096];
            loop {
                match f.write(&page) {
                    Ok(n) => filled += n as u64,
                    Err(e) => break e.to_string(),
                }
            }
        }
        Err(e) => e.to_string(),
    };
    (filled, err)
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        if let Err(e) = self.unmount() {
            eprintln!("dhp-chaos: {e:#} (unmount it by hand)");
        }
    }
}

impl Driver<'_> {
    /// Fill the transport server's disk until `ENOSPC`. False without `--disk`.
    pub(super) fn inject_disk_full(&mut self) -> bool {
        if self.tmpfs.is_none() {
            return false;
        }
        self.heal_disk(true);
        let (a, b) = FULL_SECONDS;
        let secs = self.rng.gen_range(a..=b);
        let (filled, err) = fill(&self.server_dir().join(BALLAST));
        self.fault_id += 1;
        self.live.faults += 1;
        let t = self.hist.record(
            "fault",
            json!({"fault_id": self.fault_id, "kind": "disk-full", "signal": "DISK", "victim": "peer-disk", "role": "disk",
                   "ballast_bytes": filled, "error": err, "duration_s": secs}),
        );
        self.hist.record("observe", json!({"what": "disk-full", "fault_id": self.fault_id, "ballast_bytes": filled}));
        self.disk_full = Some((self.fault_id, t + secs));
        true
    }

    /// Free the disk once its time is up (or now, with `force`), and
    /// restart a transport server whose journal failed meanwhile.
    pub(super) fn heal_disk(&mut self, force: bool) {
        self.heal_store(force);
        let Some((id, until)) = self.disk_full else { return };
        if !force && hist::now() < until {
            return;
        }
        self.free_disk(id, "time");
        let wedged = (0..self.table.procs.len()).find(|&i| {
            let p = &self.table.procs[i];
            p.role == Role::Transport
                && p.alive()
                && std::fs::read_to_string(&p.log).is_ok_and(|s| s.contains("journal sync failed"))
        });
        if let Some(i) = wedged {
            self.signal(i, Signal::SIGKILL, "disk-restart", id);
        }
    }
}

impl Driver<'_> {
    fn free_disk(&mut self, id: u64, reason: &str) {
        let _ = std::fs::remove_file(self.server_dir().join(BALLAST));
        self.disk_full = None;
        self.hist.record("disk-heal", json!({"fault_id": id, "reason": reason}));
    }

    /// Host death: the standby serves the dead host's log directory (its
    /// disk, re-attached), so it takes the tmpfs over (and unmounts it at
    /// its end). A disk-full fault still on ends with the host: the ballast
    /// stands for a process of that host filling its disk.
    pub fn adopt_disk(&mut self, dead: &mut Driver<'_>) {
        if let Some((id, _)) = dead.disk_full {
            dead.free_disk(id, "host-death");
        }
        dead.free_store_on_death();
        if let Some(t) = dead.tmpfs.take() {
            self.hist.record("observe", json!({"what": "disk-attach", "from_host_death": true}));
            self.tmpfs = Some(t);
        }
    }
}
