//! The page titles the demo fetches and the seeded choices it makes.
//!
//! Every title is a real English Wikipedia article, so `--source wikipedia`
//! fetches real pages. A seed picks which titles (and, for the mirror, each
//! page's response delay and synthetic content); the same seed always
//! gives the same run. The PRNG is a local splitmix64 so that a seed means
//! the same thing across platforms and dependency versions.

/// English Wikipedia article titles (URL form: underscores for spaces).
pub const TITLES: &[&str] = &[
    "Alan_Turing",
    "Ada_Lovelace",
    "Grace_Hopper",
    "John_von_Neumann",
    "Claude_Shannon",
    "Edsger_W._Dijkstra",
    "Donald_Knuth",
    "Barbara_Liskov",
    "Leslie_Lamport",
    "Tony_Hoare",
    "Dennis_Ritchie",
    "Ken_Thompson",
    "Margaret_Hamilton_(software_engineer)",
    "Frances_E._Allen",
    "John_McCarthy_(computer_scientist)",
    "Marvin_Minsky",
    "Niklaus_Wirth",
    "Tim_Berners-Lee",
    "Vint_Cerf",
    "Radia_Perlman",
    "Kurt_Gödel",
    "Gödel's_incompleteness_theorems",
    "Emmy_Noether",
    "Carl_Friedrich_Gauss",
    "Leonhard_Euler",
    "Srinivasa_Ramanujan",
    "Paul_Erdős",
    "Emil_Post",
    "Alonzo_Church",
    "Lambda_calculus",
    "Turing_machine",
    "Halting_problem",
    "P_versus_NP_problem",
    "Byzantine_fault",
    "Paxos_(computer_science)",
    "Raft_(algorithm)",
    "Two-phase_commit_protocol",
    "Lamport_timestamp",
    "Vector_clock",
    "CAP_theorem",
    "Consensus_(computer_science)",
    "Distributed_computing",
    "Fault_tolerance",
    "Write-ahead_logging",
    "Checkpointing",
    "Idempotence",
    "Lease_(computer_science)",
    "Heartbeat_(computing)",
    "Watchdog_timer",
    "Dead_letter_queue",
    "Exactly-once_delivery",
    "Compare-and-swap",
    "Mutual_exclusion",
    "Deadlock",
    "Dining_philosophers_problem",
    "SHA-2",
    "Merkle_tree",
    "Content-addressable_storage",
    "JSON",
    "SQLite",
    "Unix",
    "Linux_kernel",
    "Signal_(IPC)",
    "Kill_(command)",
    "Out_of_memory",
    "Process_(computing)",
    "Transmission_Control_Protocol",
    "Hypertext_Transfer_Protocol",
    "Network_namespace",
    "Virtual_machine",
    "Rust_(programming_language)",
    "Python_(programming_language)",
    "C_(programming_language)",
    "Lisp_(programming_language)",
    "Fortran",
    "COBOL",
    "ALGOL",
    "Simula",
    "Smalltalk",
    "Erlang_(programming_language)",
    "ENIAC",
    "Colossus_computer",
    "Manchester_Baby",
    "Analytical_engine",
    "Difference_engine",
    "Apollo_Guidance_Computer",
    "ARPANET",
    "World_Wide_Web",
    "Wikipedia",
    "Encyclopedia",
    "Library_of_Alexandria",
    "Printing_press",
    "Johannes_Gutenberg",
    "Rosetta_Stone",
    "Antikythera_mechanism",
    "Abacus",
    "Slide_rule",
    "Logarithm",
    "Prime_number",
    "Sieve_of_Eratosthenes",
];

/// splitmix64: small, fast, and the same everywhere.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// Seeded from a seed and a label (e.g. a title), independent per label.
    pub fn for_label(seed: u64, label: &str) -> Self {
        use sha2::{Digest, Sha256};
        let d = Sha256::new().chain_update(seed.to_le_bytes()).chain_update(label.as_bytes()).finalize();
        let mut b = [0u8; 8];
        b.copy_from_slice(&d[..8]);
        SplitMix64(u64::from_le_bytes(b))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi` (hi >= lo).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.next_u64() % (hi - lo + 1)
    }
}

/// The `n` titles a seed picks, in fetch order (a seeded shuffle).
pub fn pick(seed: u64, n: usize) -> anyhow::Result<Vec<String>> {
    if n == 0 || n > TITLES.len() {
        anyhow::bail!("--pages must be between 1 and {} (the demo knows {} titles)", TITLES.len(), TITLES.len());
    }
    let mut all: Vec<&str> = TITLES.to_vec();
    let mut rng = SplitMix64::new(seed ^ 0x5EED_7171_u64);
    // Fisher-Yates.
    for i in (1..all.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        all.swap(i, j);
    }
    Ok(all.into_iter().take(n).map(str::to_string).collect())
}

/// Human form of a URL title.
pub fn display(title: &str) -> String {
    title.replace('_', " ")
}

/// Percent-encode a title for a URL path segment, as Wikipedia links do
/// (RFC 3986 unreserved characters stay; everything else is %XX of UTF-8).
pub fn encode_title(title: &str) -> String {
    let mut out = String::with_capacity(title.len() * 2);
    for b in title.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decode a percent-encoded path segment; `None` if malformed or not UTF-8.
pub fn decode_title(seg: &str) -> Option<String> {
    let bytes = seg.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = seg.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pick_is_deterministic_and_distinct() {
        let a = pick(42, 60).unwrap();
        assert_eq!(a, pick(42, 60).unwrap());
        assert_ne!(a, pick(43, 60).unwrap());
        let set: std::collections::HashSet<_> = a.iter().collect();
        assert_eq!(set.len(), 60);
        assert!(pick(1, 0).is_err());
        assert!(pick(1, TITLES.len() + 1).is_err());
        let all: std::collections::HashSet<_> = TITLES.iter().collect();
        assert_eq!(all.len(), TITLES.len(), "titles must be unique");
    }

    #[test]
    fn encoding_round_trips() {
        for t in TITLES {
            let e = encode_title(t);
            assert!(e.is_ascii());
            assert_eq!(decode_title(&e).as_deref(), Some(*t));
        }
        assert_eq!(encode_title("Gödel's"), "G%C3%B6del%27s");
        assert_eq!(decode_title("%zz"), None);
    }
}
