//! The prime census: the built-in task kind the reference's chaos harness
//! uses. Count and sum the primes in `[lo, hi)`, chunk by chunk.

use crate::error::{Error, Result};
use serde_json::{json, Value};

/// Task kind string.
pub const KIND: &str = "prime.census";

/// Largest HI of a census: the sum of the primes below 10^10 (≈ 2.2·10^18)
/// still fits a `u64`, so no counter can wrap.
pub const MAX_HI: u64 = 10_000_000_000;
/// Largest CHUNK: one sieve segment is CHUNK bytes of memory.
pub const MAX_CHUNK: u64 = 10_000_000;

/// A census range `[lo, hi)` sieved `chunk` numbers at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// First number of the range (inclusive).
    pub lo: u64,
    /// End of the range (exclusive).
    pub hi: u64,
    /// Numbers sieved per chunk (one checkpoint each).
    pub chunk: u64,
}

impl Spec {
    /// A validated range: `lo < hi <= MAX_HI`, `0 < chunk <= MAX_CHUNK`.
    pub fn new(lo: u64, hi: u64, chunk: u64) -> Result<Spec> {
        if hi > MAX_HI {
            return Err(Error::OutOfRange {
                name: "census HI".into(),
                value: hi.to_string(),
                range: format!("at most {MAX_HI}"),
            });
        }
        if lo >= hi {
            return Err(Error::invalid(format!("census wants LO < HI, got {lo},{hi}")));
        }
        if !(1..=MAX_CHUNK).contains(&chunk) {
            return Err(Error::OutOfRange {
                name: "census CHUNK".into(),
                value: chunk.to_string(),
                range: format!("[1, {MAX_CHUNK}]"),
            });
        }
        Ok(Spec { lo, hi, chunk })
    }

    /// Parse `LO,HI,CHUNK` (non-negative integers).
    pub fn parse(text: &str) -> Result<Spec> {
        let parts: Vec<&str> = text.split(',').map(str::trim).collect();
        let [lo, hi, chunk] = parts[..] else {
            return Err(Error::invalid(format!("census wants LO,HI,CHUNK, got {text:?}")));
        };
        let num = |what: &str, p: &str| {
            p.parse::<u64>().map_err(|e| Error::Invalid {
                message: format!("census {what} must be a non-negative integer, got {p:?}"),
                source: Some(e),
            })
        };
        Spec::new(num("LO", lo)?, num("HI", hi)?, num("CHUNK", chunk)?)
    }

    /// Number of chunks (checkpoints) of a full run.
    pub fn chunks(&self) -> u64 {
        (self.hi - self.lo).div_ceil(self.chunk)
    }
}

/// Count and sum of the primes in `[lo, hi)` (segmented sieve).
pub fn chunk(lo: u64, hi: u64) -> (u64, u64) {
    if hi <= lo || hi <= 2 {
        return (0, 0);
    }
    let lo = lo.max(2);
    let root = (hi as f64).sqrt() as u64 + 1;
    let mut small = vec![true; (root + 1) as usize];
    let mut base = Vec::new();
    for i in 2..=root {
        if small[i as usize] {
            base.push(i);
            let mut j = i * i;
            while j <= root {
                small[j as usize] = false;
                j += i;
            }
        }
    }
    let mut seg = vec![true; (hi - lo) as usize];
    for &p in &base {
        let start = (p * p).max(lo.div_ceil(p) * p);
        let mut m = start;
        while m < hi {
            seg[(m - lo) as usize] = false;
            m += p;
        }
    }
    let (mut count, mut sum) = (0u64, 0u64);
    for (i, is_prime) in seg.iter().enumerate() {
        if *is_prime {
            count += 1;
            sum += lo + i as u64;
        }
    }
    (count, sum)
}

/// The output schema the reference's chaos harness dispatches with.
pub fn output_schema() -> Value {
    json!({"type": "object",
           "properties": {"lo": {"type": "integer"}, "hi": {"type": "integer"},
                          "prime_count": {"type": "integer"}, "prime_sum": {"type": "integer"},
                          "chunks_done": {"type": "integer"}},
           "required": ["lo", "hi", "prime_count", "prime_sum", "chunks_done"]})
}

/// Inputs `{"inline": {"lo", "hi", "chunk"}}`.
pub fn inputs(lo: u64, hi: u64, chunk: u64) -> Value {
    json!({"inline": {"lo": lo, "hi": hi, "chunk": chunk}})
}

/// The correct result, recomputed from scratch.
pub fn expected(lo: u64, hi: u64, chunk_size: u64) -> Value {
    let (c, s) = chunk(lo, hi);
    json!({"lo": lo, "hi": hi, "prime_count": c, "prime_sum": s, "chunks_done": (hi - lo).div_ceil(chunk_size.max(1))})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_ranges() {
        assert_eq!(chunk(0, 10), (4, 17));
        assert_eq!(chunk(10, 20), (4, 11 + 13 + 17 + 19));
        assert_eq!(chunk(0, 2), (0, 0));
        let (c1, s1) = chunk(5_000_000, 5_000_100);
        let (c2, s2) = chunk(5_000_100, 5_000_200);
        assert_eq!(chunk(5_000_000, 5_000_200), (c1 + c2, s1 + s2));
    }

    #[test]
    fn specs_are_bounded() {
        assert_eq!(Spec::parse("0, 10,3").unwrap().chunks(), 4);
        for bad in [
            "0,18446744073709551615,2",
            "5,5,1",
            "0,10,0",
            "0,10",
            "-1,10,1",
            "0,10,x",
            "0,10,10000001",
            "0,10000000001,1",
        ] {
            assert!(Spec::parse(bad).is_err(), "{bad}");
        }
        assert!(Spec::parse("0,10000000000,10000000").is_ok());
    }
}
