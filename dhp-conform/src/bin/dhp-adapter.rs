//! `dhp-adapter`: the dhp-conform adapter for dhp-core (see
//! `dhp_conform::rs_adapter` and ADAPTERS.md).

fn main() {
    std::process::exit(dhp_conform::rs_adapter::run(std::env::args().skip(1)));
}
