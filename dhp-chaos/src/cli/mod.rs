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
