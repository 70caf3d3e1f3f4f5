//! The writers' queue: a robust, process-shared mutex in
//! `<root>/dhp.sqlite3-writer-queue`, taken before the writer lock
//! ([`super::WRITER_LOCK_FILE`]).
//!
//! Why: Linux hands an exclusive `flock` over by waking waiters in a
//! cascade: each woken waiter that finds the lock taken again re-blocks and
//! wakes the waiters queued behind it, so with 31 writers waiting every
//! commit woke about half of them (measured: 16 voluntary context switches
//! per hand-over with 32 processes, against one with a single process).
//! On 2 cores those wake-ups took the CPU the lock holder needed. A futex
//! wakes one waiter per unlock: with this queue in front, at most one
//! process waits on the `flock` at a time.
//!
//! The `flock` stays what it was — the lock that orders dhp-rs writers, that
//! older dhp-rs versions take, and that the stalled-writer watchdog reads
//! in /proc/locks. The queue only decides who waits for it. Robust: the
//! kernel releases the turn of a thread that dies, SIGKILL included, and
//! the next waiter takes it (`EOWNERDEAD`, made consistent at once: the
//! mutex guards no data). A waiter that has not got its turn after
//! [`QUEUE_WAIT`] (a process stopped holding it, say) goes to the `flock`
//! without it, as before the queue existed, and so do its process's next
//! writes for [`QUEUE_BACK_OFF`], so that a turn nobody will give back
//! costs one wait, not one per write; so does every writer where the
//! file cannot be made or mapped (read-only directory, another user's
//! store, not Linux with glibc).
//!
//! A turn no live thread holds can still look held: a machine that went
//! down with the mutex locked left that state in the file, and a store
//! copied while a writer held its turn carries it into the copy, where no
//! holder's death will ever release it. The first is cured at open: the
//! file is stamped with the boot it was initialised in
//! (`/proc/sys/kernel/random/boot_id`), and a file from another boot is
//! initialised again (no thread of this boot can hold it: each would have
//! stamped it). The second costs one [`QUEUE_WAIT`] per back-off period.

use std::path::Path;
use std::time::Duration;

/// The queue's file next to the database.
pub const QUEUE_FILE: &str = "dhp.sqlite3-writer-queue";

/// How long a writer waits for its turn before going to the writer lock
/// without it. A turn lasts one transaction (32 checkpointing writers queue
/// for about 10 ms); this bounds what a turn held by a stopped process (a
/// SIGSTOP while it waited for the writer lock) costs each write until it
/// runs or dies. Going on without the turn is always safe: the writer lock
/// and SQLite's lock still order the writers.
pub const QUEUE_WAIT: Duration = Duration::from_millis(100);

/// After a wait for a turn timed out, this process's writers go straight to
/// the writer lock for this long before they queue again.
pub const QUEUE_BACK_OFF: Duration = Duration::from_secs(5);

/// A store's writer queue, mapped once per store handle.
pub struct WriterQueue {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    inner: imp::Shared,
}

impl std::fmt::Debug for WriterQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WriterQueue")
    }
}

/// This thread's turn; the next waiter's when dropped.
pub struct Turn<'a> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    _inner: imp::Held<'a>,
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    _q: std::marker::PhantomData<&'a ()>,
}

impl WriterQueue {
    /// Open (creating and initialising if needed) the queue of the store at
    /// `root`; `None` where there is none to be had (see the module docs).
    pub fn open(root: &Path) -> Option<WriterQueue> {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            imp::Shared::open(&root.join(QUEUE_FILE)).map(|inner| WriterQueue { inner })
        }
        #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
        {
            let _ = root;
            None
        }
    }

    /// Wait (asleep) for this thread's turn, at most [`QUEUE_WAIT`]. `None`
    /// after that, or if the queue is unusable: go on without it.
    pub fn enter(&self) -> Option<Turn<'_>> {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            self.inner.lock(QUEUE_WAIT).map(|h| Turn { _inner: h })
        }
        #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
        {
            None
        }
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
mod imp {
    use nix::fcntl::{Flock, FlockArg};
    use nix::libc;
    use std::os::fd::AsRawFd;
    use std::path::Path;
    use std::ptr::NonNull;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::time::Duration;

    /// Bytes mapped: the magic word, the boot stamp at [`BOOT_AT`], then
    /// the mutex at [`MUTEX_AT`].
    const LEN: usize = 4096;
    const BOOT_AT: usize = 8;
    const MUTEX_AT: usize = 64;
    /// Set once the mutex is initialised; carries the mutex's size so that
    /// a file initialised by another C library layout is not reused.
    const MAGIC: u64 = 0x6468_7072_735f_7132 ^ std::mem::size_of::<libc::pthread_mutex_t>() as u64;

    /// The shared mapping of the queue file.
    pub(super) struct Shared {
        base: NonNull<u8>,
        /// Set when the mutex answered with an error that waiting cannot
        /// cure (`ENOTRECOVERABLE`, …): this handle stops using it.
        broken: AtomicBool,
        /// Nanoseconds after [`Shared::epoch`] before which this handle
        /// does not queue (set when a wait timed out); 0: queue.
        skip_until: AtomicU64,
        epoch: std::time::Instant,
    }

    // SAFETY: the mapping is shared memory touched only through the
    // process-shared pthread mutex (made for concurrent use by any thread of
    // any process) and the atomic magic word; the pointer stays valid until
    // `Drop` unmaps it, which needs `&mut self`.
    unsafe impl Send for Shared {}
    // SAFETY: as above.
    unsafe impl Sync for Shared {}

    /// A locked turn; unlocked on drop by the thread that locked it (the
    /// raw-pointer marker keeps it on that thread).
    pub(super) struct Held<'a> {
        q: &'a Shared,
        _not_send: std::marker::PhantomData<*const ()>,
    }

    impl Shared {
        pub(super) fn open(path: &Path) -> Option<Shared> {
            let file =
                std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path).ok()?;
            // One initialiser at a time: an exclusive flock of the queue
            // file itself (not the writer lock: nobody waits on this one
            // longer than an initialisation).
            let mut file = file;
            let init = loop {
                match Flock::lock(file, FlockArg::LockExclusive) {
                    Ok(l) => break l,
                    Err((f, nix::errno::Errno::EINTR)) => file = f,
                    Err(_) => return None,
                }
            };
            if init.metadata().ok()?.len() < LEN as u64 {
                init.set_len(LEN as u64).ok()?;
            }
            // SAFETY: a fresh shared mapping of LEN bytes of a file at
            // least LEN long (checked above, and nobody shrinks it); the
            // mapping outlives the descriptor, which may then close.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    LEN,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    init.as_raw_fd(),
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                return None;
            }
            let q = Shared {
                base: NonNull::new(p.cast::<u8>())?,
                broken: AtomicBool::new(false),
                skip_until: AtomicU64::new(0),
                epoch: std::time::Instant::now(),
            };
            let boot = boot_stamp();
            if q.magic().load(Ordering::Acquire) != MAGIC || q.boot().load(Ordering::Acquire) != boot {
                // Only here, under the init lock, before the magic says
                // it is ready: nobody else uses the mutex yet (a file of
                // another boot: nobody of this boot has used it).
                if !q.init_mutex() {
                    return None;
                }
                q.boot().store(boot, Ordering::Release);
                q.magic().store(MAGIC, Ordering::Release);
            }
            drop(init);
            Some(q)
        }

        fn magic(&self) -> &AtomicU64 {
            // SAFETY: offset 0 of a page-aligned mapping, 8-byte aligned,
            // inside the mapping, and only ever accessed atomically.
            unsafe { &*self.base.as_ptr().cast::<AtomicU64>() }
        }

        fn boot(&self) -> &AtomicU64 {
            // SAFETY: offset 8 of a page-aligned mapping, 8-byte aligned,
            // inside the mapping, and only ever accessed atomically.
            unsafe { &*self.base.as_ptr().add(BOOT_AT).cast::<AtomicU64>() }
        }

        fn mutex(&self) -> *mut libc::pthread_mutex_t {
            const _: () = assert!(MUTEX_AT + std::mem::size_of::<libc::pthread_mutex_t>() <= LEN);
            // SAFETY: MUTEX_AT plus the mutex's size is inside the mapping
            // (asserted at compile time), and 64 is aligned for it.
            unsafe { self.base.as_ptr().add(MUTEX_AT).cast::<libc::pthread_mutex_t>() }
        }

        /// A process-shared, robust, error-checking mutex (a thread that
        /// asks again for a turn it holds gets `EDEADLK`, not a hang).
        fn init_mutex(&self) -> bool {
            // SAFETY: attr is initialised before use and destroyed after;
            // the mutex memory is ours alone (see the caller).
            unsafe {
                let mut attr = std::mem::MaybeUninit::<libc::pthread_mutexattr_t>::uninit();
                if libc::pthread_mutexattr_init(attr.as_mut_ptr()) != 0 {
                    return false;
                }
                let a = attr.as_mut_ptr();
                let ok = libc::pthread_mutexattr_setpshared(a, libc::PTHREAD_PROCESS_SHARED) == 0
                    && libc::pthread_mutexattr_setrobust(a, libc::PTHREAD_MUTEX_ROBUST) == 0
                    && libc::pthread_mutexattr_settype(a, libc::PTHREAD_MUTEX_ERRORCHECK) == 0
                    && libc::pthread_mutex_init(self.mutex(), a) == 0;
                libc::pthread_mutexattr_destroy(a);
                ok
            }
        }

        pub(super) fn lock(&self, wait: Duration) -> Option<Held<'_>> {
            if self.broken.load(Ordering::Relaxed) || self.backing_off() {
                return None;
            }
            let deadline = realtime_after(wait)?;
            // SAFETY: an initialised process-shared mutex inside the mapping.
            let rc = unsafe { libc::pthread_mutex_timedlock(self.mutex(), &deadline) };
            let held = || Held { q: self, _not_send: std::marker::PhantomData };
            match rc {
                0 => Some(held()),
                // The previous holder died holding its turn. The mutex
                // guards no data of its own (SQLite rolls back what that
                // holder left): mark it consistent and go on.
                libc::EOWNERDEAD => {
                    // SAFETY: we hold the mutex (EOWNERDEAD grants it).
                    if unsafe { libc::pthread_mutex_consistent(self.mutex()) } == 0 {
                        return Some(held());
                    }
                    drop(held()); // unlocks: the next waiter finds it unusable too
                    self.broken.store(true, Ordering::Relaxed);
                    None
                }
                libc::ETIMEDOUT => {
                    let until = self.epoch.elapsed().saturating_add(super::QUEUE_BACK_OFF);
                    self.skip_until.store(u64::try_from(until.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
                    tracing::debug!("no writer-queue turn within the wait; the writer lock alone for a while");
                    None
                }
                errno => {
                    tracing::debug!(errno, "writer queue unusable; the writer lock alone");
                    self.broken.store(true, Ordering::Relaxed);
                    None
                }
            }
        }
    }

    impl Shared {
        fn backing_off(&self) -> bool {
            let until = self.skip_until.load(Ordering::Relaxed);
            until != 0 && u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX) < until
        }
    }

    /// This boot's id, folded to 64 bits (FNV-1a); 1 where it cannot be
    /// read, so the stamp never equals a fresh file's zeros.
    fn boot_stamp() -> u64 {
        let Ok(id) = std::fs::read("/proc/sys/kernel/random/boot_id") else { return 1 };
        let h = id.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3));
        h.max(2)
    }

    impl Drop for Held<'_> {
        fn drop(&mut self) {
            // SAFETY: this thread holds the mutex (Held is made only when
            // the lock was granted, and cannot leave the thread).
            unsafe {
                libc::pthread_mutex_unlock(self.q.mutex());
            }
        }
    }

    impl Drop for Shared {
        fn drop(&mut self) {
            // SAFETY: the mapping made in `open`, unmapped once; no Held
            // borrows it any more (they borrow `self`).
            unsafe {
                libc::munmap(self.base.as_ptr().cast(), LEN);
            }
        }
    }

    /// CLOCK_REALTIME `wait` from now: `pthread_mutex_timedlock`'s deadline.
    fn realtime_after(wait: Duration) -> Option<libc::timespec> {
        let at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok()?.checked_add(wait)?;
        Some(libc::timespec {
            tv_sec: libc::time_t::try_from(at.as_secs()).ok()?,
            tv_nsec: libc::c_long::from(at.subsec_nanos()),
        })
    }
}
