//! `mutant-shipper`: a worker whose shipper ignores the asynchronous lag
//! bound, to prove that the async-lag invariant catches it. It runs the
//! real `dhp work` with every argument it was given, except that
//! `--ship-max-lag N` becomes a bound far beyond any round.
//!
//! ```text
//! mutant-shipper --dhp PATH  <dhp work arguments>
//! ```
//! Plugs into a round as `--workers "mutant-shipper --dhp PATH" --ship tcp-async`.

use std::os::unix::process::CommandExt;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let Some(i) = args.iter().position(|a| a == "--dhp").filter(|i| i + 1 < args.len()) else {
        eprintln!("usage: mutant-shipper --dhp PATH <dhp work arguments>");
        std::process::exit(2);
    };
    let dhp = args.remove(i + 1);
    args.remove(i);
    // THE BUG: the bound the harness asked for is not the one used
    if let Some(j) = args.iter().position(|a| a == "--ship-max-lag").filter(|j| j + 1 < args.len()) {
        args[j + 1] = "1000000".into();
    }
    let e = std::process::Command::new(&dhp).arg("work").args(&args).exec();
    eprintln!("mutant-shipper: cannot run {dhp}: {e}");
    std::process::exit(2);
}
