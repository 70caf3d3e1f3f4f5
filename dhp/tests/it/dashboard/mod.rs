//! The `dhp` program's dashboard scenarios.

mod auth;
mod browser;
mod idle_flood;
mod measure;
mod page_counts;
mod paging;
mod postgres;
mod read_only;
