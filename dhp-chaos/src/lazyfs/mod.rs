//! A file system that loses what was not fsynced (`--lose-unsynced`):
//! Jepsen's LazyFS idea, as a small FUSE file system served by the harness.
//!
//! The round's SQLite store directory is mounted through it; every write
//! goes to the real file at once (so the store's processes see each
//! other's writes as through a page cache), and the durable bytes it
//! overwrites are kept aside until the file is fsynced ([`undo::Undo`]). A
//! crash ([`LazyMount::crash`]), done only once every process using the
//! store is dead, puts every file back to what its last fsync left: the
//! database, its `-wal` and its `-shm` (never fsynced by SQLite, so it comes
//! back empty, and SQLite rebuilds it). File creation and removal are
//! durable at once; only contents are lost.
//!
//! The kernel serves the mount through `/dev/fuse`, mounted with mount(2)
//! (root; no libfuse, no fusermount). Where that is missing the fault is
//! refused ([`check_available`]), never imitated.

mod fs;
pub mod undo;

use std::io;
use std::path::{Path, PathBuf};
pub use undo::Lost;

/// A store directory mounted through the lazy file system.
pub struct LazyMount {
    fs: fs::LazyFs,
    session: Option<fuser::BackgroundSession>,
    dir: PathBuf,
}

impl std::fmt::Debug for LazyMount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyMount").field("dir", &self.dir).field("backing", &self.fs.backing).finish()
    }
}

/// Why this machine cannot lose un-fsynced writes honestly, if it cannot.
pub fn check_available() -> Result<(), String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("--lose-unsynced mounts a FUSE file system under the store and needs root".into());
    }
    if !Path::new("/dev/fuse").exists() {
        return Err("--lose-unsynced needs /dev/fuse (the FUSE device), which this machine does not have".into());
    }
    let fss = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
    if !fss.lines().any(|l| l.split_whitespace().last() == Some("fuse")) {
        return Err("--lose-unsynced needs the kernel's fuse file system (/proc/filesystems lists none)".into());
    }
    Ok(())
}

/// The backing directory of the store directory `dir`.
pub fn backing_of(dir: &Path) -> PathBuf {
    let mut s = dir.as_os_str().to_os_string();
    s.push(".disk");
    PathBuf::from(s)
}

impl LazyMount {
    /// Move `dir`'s files to its backing directory (durable as they are)
    /// and mount the lazy file system over `dir`.
    pub fn mount(dir: &Path) -> io::Result<LazyMount> {
        let backing = backing_of(dir);
        std::fs::rename(dir, &backing)?;
        std::fs::create_dir(dir)?;
        let fs = fs::LazyFs::new(backing.clone());
        let mut cfg = fuser::Config::default();
        cfg.mount_options =
            vec![fuser::MountOption::FSName("dhp-chaos-lazyfs".into()), fuser::MountOption::DefaultPermissions];
        cfg.acl = fuser::SessionACL::All;
        match fuser::spawn_mount(fs.clone(), dir, &cfg) {
            Ok(session) => {
                // a signal or a panic detaches it (`umount -l`) with the round's other mounts
                let _ = crate::teardown::guarded(|r| {
                    r.mounts.insert(dir.to_path_buf());
                    Ok(())
                });
                Ok(LazyMount { fs, session: Some(session), dir: dir.to_path_buf() })
            }
            Err(e) => {
                let _ = std::fs::remove_dir(dir);
                let _ = std::fs::rename(&backing, dir);
                Err(e)
            }
        }
    }

    /// The crash: every file back to its last fsync. Only while no process
    /// has a file of the store open (its page cache would keep the lost bytes).
    pub fn crash(&self) -> io::Result<Vec<(String, Lost)>> {
        self.fs.crash()
    }

    /// fsync calls the file system served so far.
    pub fn fsyncs(&self) -> u64 {
        self.fs.lock().fsyncs
    }

    /// Unmount and put the files back in `dir` (the checker reads them there).
    pub fn unmount(&mut self) -> io::Result<()> {
        let Some(s) = self.session.take() else { return Ok(()) };
        crate::teardown::forget(|r| {
            r.mounts.remove(&self.dir);
        });
        if let Err(e) = s.umount_and_join() {
            // busy (a file still open): detach it, so no process can block
            // on a mount whose server is gone, and keep the files where they are
            let _ = std::process::Command::new("umount").arg("-l").arg(&self.dir).status();
            return Err(e);
        }
        std::fs::remove_dir(&self.dir)?;
        std::fs::rename(&self.fs.backing, &self.dir)
    }
}

impl Drop for LazyMount {
    fn drop(&mut self) {
        if let Err(e) = self.unmount() {
            eprintln!("dhp-chaos: unmounting the lazy store file system at {}: {e}", self.dir.display());
        }
    }
}
