//! The Wikipedia kill demo of dhp-rs: the mirror, the page worker, the
//! network namespaces and the checks behind `cargo run -p demo`.

pub mod fetch;
pub mod mirror;
pub mod netns;
pub mod pageworker;
pub mod procs;
pub mod record;
pub mod titles;
pub mod ui;
pub mod verify;
