//! The `dhp-chaos` binary's command line (this module belongs to the
//! binary, not to the `dhp_chaos` library): the flags and their typed
//! parsers, `analyze`, the replay command, a run and its rounds.

pub mod analyze;
pub mod args;
pub mod audit;
pub mod db;
pub mod ledger;
pub mod mask;
pub mod parse;
pub mod replay;
pub mod rounds;
pub mod run;
pub mod shrink;

/// `dhp-chaos list`: the invariants' declarations (`check::DESCRIPTORS`).
pub fn list(format: &str) -> anyhow::Result<i32> {
    use dhp_chaos::check::list;
    let out = match format {
        "json" => format!("{:#}\n", list::json()),
        "markdown" => list::markdown(),
        "sources" => list::sources_markdown(),
        _ => list::text(),
    };
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    match o.write_all(out.as_bytes()).and_then(|()| o.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(0),
    }
}
