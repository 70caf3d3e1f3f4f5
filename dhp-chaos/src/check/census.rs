//! The census a correct run computes, recomputed from scratch by the
//! checker's own sieve (not dhp-core's: a bug in the workers' census must
//! not also be in the number they are checked against). Pinned to known
//! prime counts and sums, and to the census the workers run
//! (dhp-workload), in the tests below.

use serde_json::{json, Value};

/// Count and sum of the primes in `[lo, hi)`: a sieve of the segment
/// `[lo, hi)` by every prime up to √hi, found by trial division.
pub fn primes_in(lo: u64, hi: u64) -> (u64, u64) {
    let lo = lo.max(2);
    if hi <= lo {
        return (0, 0);
    }
    let mut composite = vec![false; (hi - lo) as usize];
    let mut p = 2u64;
    while p.saturating_mul(p) < hi {
        if is_prime_by_trial(p) {
            // first multiple of p in the segment that is not p itself
            let first = (lo.div_ceil(p) * p).max(p * p);
            let mut m = first;
            while m < hi {
                composite[(m - lo) as usize] = true;
                m += p;
            }
        }
        p += 1;
    }
    composite.iter().enumerate().filter(|(_, c)| !**c).fold((0, 0), |(n, s), (i, _)| (n + 1, s + lo + i as u64))
}

fn is_prime_by_trial(n: u64) -> bool {
    n >= 2 && (2..).take_while(|d| d * d <= n).all(|d| n % d != 0)
}

/// The census state a correct run has after `k+1` chunks, for every k:
/// (next_n, count, total).
pub(crate) fn expected_chain(lo: u64, hi: u64, chunk: u64) -> Vec<(u64, u64, u64)> {
    let mut out = Vec::new();
    let (mut n, mut c, mut s) = (lo, 0u64, 0u64);
    while n < hi {
        let end = (n + chunk).min(hi);
        let (dc, ds) = primes_in(n, end);
        c += dc;
        s += ds;
        n = end;
        out.push((n, c, s));
    }
    out
}

/// The result a completed census reports (docs/PROTOCOL.md's census kind):
/// lo, hi, prime_count, prime_sum and chunks_done.
pub(crate) fn expected(lo: u64, hi: u64, chunk: u64) -> Value {
    let (c, s) = primes_in(lo, hi);
    json!({"lo": lo, "hi": hi, "prime_count": c, "prime_sum": s, "chunks_done": (hi - lo).div_ceil(chunk.max(1))})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_prime_counts_and_sums() {
        // π(x) and the sums of the primes below x (OEIS A000720, A046731).
        assert_eq!(primes_in(0, 10), (4, 17));
        assert_eq!(primes_in(0, 100), (25, 1060));
        assert_eq!(primes_in(0, 1000), (168, 76127));
        assert_eq!(primes_in(0, 1_000_000), (78498, 37_550_402_023));
        assert_eq!(primes_in(2, 3), (1, 2));
        assert_eq!(primes_in(0, 2), (0, 0));
        assert_eq!(primes_in(7, 7), (0, 0));
        // a segment: 1_000_003 is the first prime above 10^6
        assert_eq!(primes_in(1_000_000, 1_000_004), (1, 1_000_003));
        let (a, b) = (primes_in(0, 500_000), primes_in(500_000, 1_000_000));
        assert_eq!((a.0 + b.0, a.1 + b.1), (78498, 37_550_402_023));
    }

    #[test]
    fn agrees_with_the_workers_census_on_chunks_and_results() {
        for (lo, hi, chunk) in [(0, 1000, 7), (1000, 1500, 100), (5_000_000, 5_003_000, 250), (999_983, 1_000_100, 1)] {
            let mut n = lo;
            while n < hi {
                let end = (n + chunk).min(hi);
                assert_eq!(primes_in(n, end), dhp_workload::census::chunk(n, end), "[{n}, {end})");
                n = end;
            }
            assert_eq!(expected(lo, hi, chunk), dhp_workload::census::expected(lo, hi, chunk));
        }
    }
}
