//! libfaketime's per-process files, cleared for the process about to use
//! them.
//!
//! libfaketime (0.9.10, Debian's) creates the semaphore
//! `/dev/shm/sem.faketime_sem_PID`, then `/dev/shm/faketime_shm_PID`, both
//! with `O_EXCL`, when it is loaded, and removes them only at a normal
//! exit. A SIGKILLed faked process leaves both. When the pid comes round
//! again, an existing semaphore makes libfaketime go on without sharing,
//! but a shared-memory file without its semaphore stops the process at
//! load ("shm_open failed: File exists", exit 1) before the program runs.
//! The `faketime` wrapper is worse: its own semaphore for its pid makes it
//! refuse to start ("sem_open: File exists") — a supervisor that never ran
//! in CI. So the harness preloads the library itself, and a file named
//! with a pid is known stale when that pid is the caller's own and
//! libfaketime is not loaded yet: between fork and exec, where
//! [`clear_stale_on_exec`] removes them.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

/// Where Debian's and upstream's installs put the library.
pub const LIB_DIRS: [&str; 5] = [
    "/usr/lib/x86_64-linux-gnu/faketime",
    "/usr/lib/aarch64-linux-gnu/faketime",
    "/usr/lib/faketime",
    "/usr/local/lib/faketime",
    "/usr/lib64/faketime",
];

/// libfaketime's shared object in the usual install locations.
pub fn find_library() -> Option<PathBuf> {
    LIB_DIRS.iter().map(|d| PathBuf::from(d).join("libfaketime.so.1")).find(|p| p.is_file())
}

/// The prefixes libfaketime names its files with, NUL-free, before the pid.
const PREFIXES: [&[u8]; 2] = [b"/dev/shm/faketime_shm_", b"/dev/shm/sem.faketime_sem_"];

/// Have `cmd`'s child remove its own pid's stale libfaketime files right
/// before it execs (and so before libfaketime loads).
pub fn clear_stale_on_exec(cmd: &mut Command) {
    unsafe_hook::install(cmd);
}

/// `prefix` + decimal `pid` + NUL into `buf`, without allocating (it runs
/// in a forked child). `None` when it does not fit.
fn path_for(buf: &mut [u8; 64], prefix: &[u8], pid: u32) -> Option<usize> {
    let mut digits = [0u8; 10];
    let mut n = 0;
    let mut p = pid;
    loop {
        digits[n] = b'0' + (p % 10) as u8;
        n += 1;
        p /= 10;
        if p == 0 {
            break;
        }
    }
    let len = prefix.len() + n + 1;
    if len > buf.len() {
        return None;
    }
    buf[..prefix.len()].copy_from_slice(prefix);
    for i in 0..n {
        buf[prefix.len() + i] = digits[n - 1 - i];
    }
    buf[len - 1] = 0;
    Some(len)
}

#[allow(unsafe_code)]
mod unsafe_hook {
    use super::*;
    use nix::libc;

    pub(super) fn install(cmd: &mut Command) {
        // SAFETY: the closure runs in the forked child and makes only
        // async-signal-safe calls (getpid, unlink) on stack memory; it
        // allocates nothing and its errors are ignored (no file is fine).
        unsafe {
            cmd.pre_exec(|| {
                let pid = libc::getpid() as u32;
                for prefix in PREFIXES {
                    let mut buf = [0u8; 64];
                    if path_for(&mut buf, prefix, pid).is_some() {
                        libc::unlink(buf.as_ptr().cast());
                    }
                }
                Ok(())
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_carry_the_pid_in_decimal_and_end_in_nul() {
        let mut buf = [0u8; 64];
        let n = path_for(&mut buf, PREFIXES[0], 40213).unwrap();
        assert_eq!(&buf[..n], b"/dev/shm/faketime_shm_40213\0");
        let n = path_for(&mut buf, PREFIXES[1], 0).unwrap();
        assert_eq!(&buf[..n], b"/dev/shm/sem.faketime_sem_0\0");
        let n = path_for(&mut buf, PREFIXES[1], u32::MAX).unwrap();
        assert_eq!(&buf[..n], b"/dev/shm/sem.faketime_sem_4294967295\0");
    }

    /// libfaketime's shared object (Debian's path; scripts/services.sh
    /// installs it).
    fn lib() -> PathBuf {
        find_library().expect("libfaketime is missing: scripts/services.sh installs it (Debian package faketime)")
    }

    /// `date` under libfaketime, after a shared-memory file without its
    /// semaphore was planted for the child's own pid (by a hook that runs
    /// first), with or without the clearing hook.
    fn faked_date(clear: bool) -> std::process::Output {
        let mut cmd = Command::new("date");
        cmd.env("LD_PRELOAD", lib()).env("FAKETIME", "+1h");
        plant::install(&mut cmd);
        if clear {
            clear_stale_on_exec(&mut cmd);
        }
        cmd.output().unwrap()
    }

    #[test]
    fn a_stale_file_stops_a_faked_process_and_the_hook_clears_it() {
        let stale = faked_date(false);
        assert!(!stale.status.success(), "libfaketime started despite a stale file: {stale:?}");
        assert!(String::from_utf8_lossy(&stale.stderr).contains("File exists"), "{stale:?}");
        let cleared = faked_date(true);
        assert!(cleared.status.success(), "{cleared:?}");
    }

    #[allow(unsafe_code)]
    mod plant {
        use super::super::*;
        use nix::libc;

        pub(super) fn install(cmd: &mut Command) {
            // SAFETY: forked child, async-signal-safe calls on stack memory.
            unsafe {
                cmd.pre_exec(|| {
                    let pid = libc::getpid() as u32;
                    // the shared memory only: its semaphore would let
                    // libfaketime go on without sharing
                    {
                        let mut buf = [0u8; 64];
                        if path_for(&mut buf, PREFIXES[0], pid).is_some() {
                            let fd = libc::open(buf.as_ptr().cast(), libc::O_CREAT | libc::O_WRONLY, 0o600);
                            if fd >= 0 {
                                libc::close(fd);
                            }
                        }
                    }
                    Ok(())
                });
            }
        }
    }
}
