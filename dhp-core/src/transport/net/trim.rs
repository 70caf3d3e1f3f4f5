//! Give freed memory back to the OS after a burst of connections closes.
//!
//! glibc keeps the pages a burst of connections freed in its per-thread
//! arenas, so a server that held 1,000 hostile connections stayed near its
//! peak RSS after they were gone (15.7 → 44.7 → 44.3 MB measured). When the
//! live connections fall to a quarter of a peak of at least [`MIN_PEAK`],
//! the server asks the allocator to return its free pages (`malloc_trim`).
//! Nothing else calls it: it walks every arena, so it is kept to those
//! moments.

/// Bursts smaller than this are not worth a trim.
pub(crate) const MIN_PEAK: usize = 64;

/// Watches the number of live connections and says when to trim.
#[derive(Debug, Default)]
pub(crate) struct Trimmer {
    peak: usize,
}

impl Trimmer {
    /// A connection was accepted: `live` are open now.
    pub(crate) fn opened(&mut self, live: usize) {
        self.peak = self.peak.max(live);
    }

    /// A connection ended: `live` are still open. True when the burst is
    /// over (a trim is due); the peak then starts again from `live`.
    pub(crate) fn closed(&mut self, live: usize) -> bool {
        if self.peak >= MIN_PEAK && live <= self.peak / 4 {
            self.peak = live;
            return true;
        }
        false
    }
}

/// Return the allocator's free pages to the OS (glibc only; elsewhere the
/// allocator decides on its own).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub(crate) fn release_free_memory() {
    // SAFETY: malloc_trim takes no pointer from us; glibc walks its own
    // arenas under their locks, so it is safe to call from any thread.
    unsafe {
        nix::libc::malloc_trim(0);
    }
}

/// Return the allocator's free pages to the OS (glibc only; elsewhere the
/// allocator decides on its own).
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn release_free_memory() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_at_each_fall_to_a_quarter_while_the_burst_drains() {
        let mut t = Trimmer::default();
        for live in 1..=1000 {
            t.opened(live);
        }
        let trims: Vec<usize> = (0..1000).rev().filter(|&live| t.closed(live)).collect();
        // 1000 → 250, then 250 → 62; below a peak of 64 no more
        assert_eq!(trims, vec![250, 62]);
    }

    #[test]
    fn small_bursts_never_trim() {
        let mut t = Trimmer::default();
        for live in 1..MIN_PEAK {
            t.opened(live);
        }
        assert!(!t.closed(0));
    }
}
