//! The Wikipedia kill demo of dhp-rs: the mirror, the page worker, the
//! network namespaces and the checks behind `cargo run -p demo`.
//!
//! The titles of a run are a pure function of the seed, so a run can be
//! repeated:
//!
//! ```
//! let a = demo::titles::pick(42, 60).unwrap();
//! assert_eq!(a.len(), 60);
//! assert_eq!(a, demo::titles::pick(42, 60).unwrap());
//! assert_eq!(demo::ui::fmt_s(0.000_042), "42 µs");
//! ```

pub mod fetch;
pub mod mirror;
pub mod netns;
pub mod pageworker;
pub mod procs;
pub mod record;
pub mod slots;
pub mod titles;
pub mod ui;
pub mod verify;
