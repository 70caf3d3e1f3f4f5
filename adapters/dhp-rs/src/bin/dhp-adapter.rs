//! `dhp-adapter`: the dhp-conform adapter for dhp-core (see
//! `dhp_adapter::adapter` and dhp-conform/ADAPTERS.md).

fn main() {
    std::process::exit(dhp_adapter::adapter::run(std::env::args().skip(1)));
}
