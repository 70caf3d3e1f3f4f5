//! `dhp-mutant-adapter --mutant NAME`: the dhp-conform adapter for
//! dhp-core with one guarantee removed, to prove the conformance
//! assertions can fail (see `dhp_adapter::mutants`, `--list-mutants`).
//! Not an example adapter: that is `dhp-adapter`.

fn main() {
    std::process::exit(dhp_adapter::mutants::run(std::env::args().skip(1)));
}
