//! The census a correct run computes, recomputed from scratch.

pub(crate) use dhp_core::census::expected;

/// The census state a correct run has after `k+1` chunks, for every k:
/// (next_n, count, total).
pub(crate) fn expected_chain(lo: u64, hi: u64, chunk: u64) -> Vec<(u64, u64, u64)> {
    let mut out = Vec::new();
    let (mut n, mut c, mut s) = (lo, 0u64, 0u64);
    while n < hi {
        let end = (n + chunk).min(hi);
        let (dc, ds) = dhp_core::census::chunk(n, end);
        c += dc;
        s += ds;
        n = end;
        out.push((n, c, s));
    }
    out
}
