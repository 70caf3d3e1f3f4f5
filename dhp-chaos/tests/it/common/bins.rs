//! The command lines the single-host round tests share: a small round
//! (seed, two handoffs, none bound for the DLQ, N chunks each), and the
//! mutant binaries they run as workers.

use super::{mutant_bin, run_chaos, Run};

/// `dhp-chaos` arguments of a small round: `seed`, two handoffs, none
/// bound for the DLQ, `chunks` chunks per handoff. Not coverage rounds
/// (`--allow-uncovered all`): coverage_*.rs test what a round reaches.
pub fn small_round_args(seed: u64, chunks: u32) -> Vec<String> {
    let (seed, chunks) = (seed.to_string(), chunks.to_string());
    ["--allow-uncovered", "all", "--seed", &seed, "--handoffs", "2", "--dlq-handoffs", "0", "--chunks", &chunks]
        .map(String::from)
        .to_vec()
}

/// [`run_chaos`] of a small round ([`small_round_args`]) with `extra`
/// arguments.
pub fn run_small(name: &str, seed: u64, chunks: u32, extra: &[&str]) -> Run {
    let mut args = small_round_args(seed, chunks);
    args.extend(extra.iter().map(|a| a.to_string()));
    run_chaos(name, &args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// The `--workers` command of adapters/dhp-rs-chaos/src/bin/mutant-worker.rs in `mode`.
pub fn mutant_worker(mode: &str) -> String {
    format!("{} --mode {mode}", mutant_bin().display())
}
