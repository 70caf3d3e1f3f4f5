//! A set of checkpoint seqs kept as sorted, disjoint, non-adjacent ranges:
//! a log shipped in order is one range, so memory stays O(gaps), not O(n).

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SeqSet {
    /// Inclusive `(lo, hi)` ranges, sorted, with gaps of at least one seq.
    ranges: Vec<(i64, i64)>,
}

impl SeqSet {
    pub(crate) fn new() -> Self {
        SeqSet::default()
    }

    /// Highest seq, -1 when empty.
    #[cfg(test)]
    fn max(&self) -> i64 {
        self.ranges.last().map_or(-1, |r| r.1)
    }

    /// End of the run of seqs that starts at 0 (-1 when seq 0 is
    /// missing): everything up to it is held, so it is what may be acked.
    pub(crate) fn prefix_end(&self) -> i64 {
        match self.ranges.first() {
            Some(&(0, hi)) => hi,
            _ => -1,
        }
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    pub(crate) fn contains(&self, seq: i64) -> bool {
        // First range whose hi >= seq.
        let i = self.ranges.partition_point(|r| r.1 < seq);
        self.ranges.get(i).is_some_and(|r| r.0 <= seq)
    }

    /// Insert; false when it was already there.
    pub(crate) fn insert(&mut self, seq: i64) -> bool {
        // Fast path: appending in order.
        if let Some(last) = self.ranges.last_mut() {
            if seq == last.1 + 1 {
                last.1 = seq;
                return true;
            }
            if seq > last.1 + 1 {
                self.ranges.push((seq, seq));
                return true;
            }
        } else {
            self.ranges.push((seq, seq));
            return true;
        }
        let i = self.ranges.partition_point(|r| r.1 < seq);
        if self.ranges.get(i).is_some_and(|r| r.0 <= seq) {
            return false;
        }
        let joins_prev = i > 0 && self.ranges[i - 1].1 + 1 == seq;
        let joins_next = self.ranges.get(i).is_some_and(|r| r.0 - 1 == seq);
        match (joins_prev, joins_next) {
            (true, true) => {
                self.ranges[i - 1].1 = self.ranges[i].1;
                self.ranges.remove(i);
            }
            (true, false) => self.ranges[i - 1].1 = seq,
            (false, true) => self.ranges[i].0 = seq,
            (false, false) => self.ranges.insert(i, (seq, seq)),
        }
        true
    }

    #[cfg(test)]
    fn ranges(&self) -> &[(i64, i64)] {
        &self.ranges
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_and_dedup() {
        let mut s = SeqSet::new();
        assert_eq!(s.max(), -1);
        assert!(s.is_empty());
        for q in [0, 1, 2, 5, 7, 6, 4, 3] {
            assert!(s.insert(q), "{q}");
        }
        assert_eq!(s.ranges(), &[(0, 7)]);
        assert!(!s.insert(4));
        assert!(s.insert(10));
        assert!(s.insert(12));
        assert_eq!(s.ranges(), &[(0, 7), (10, 10), (12, 12)]);
        assert!(s.insert(11));
        assert_eq!(s.ranges(), &[(0, 7), (10, 12)]);
        assert!(s.contains(0) && s.contains(7) && s.contains(11));
        assert!(!s.contains(8) && !s.contains(13) && !s.contains(-1));
        assert_eq!(s.max(), 12);
        assert_eq!(s.prefix_end(), 7);
        assert_eq!(SeqSet::new().prefix_end(), -1);
        let mut late = SeqSet::new();
        late.insert(1);
        assert_eq!(late.prefix_end(), -1, "seq 0 missing: nothing contiguous");
    }

    #[test]
    fn matches_a_hashset() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut s = SeqSet::new();
        let mut h = std::collections::HashSet::new();
        for _ in 0..5000 {
            let q = rng.gen_range(0..400);
            assert_eq!(s.insert(q), h.insert(q));
        }
        for q in -2..402 {
            assert_eq!(s.contains(q), h.contains(&q));
        }
        assert_eq!(s.max(), *h.iter().max().unwrap());
        for w in s.ranges().windows(2) {
            assert!(w[0].1 + 1 < w[1].0);
        }
    }
}
