pub mod fetch;
pub mod mirror;
pub mod record;
pub mod titles;
pub mod pageworker;
pub mod netns;
pub mod procs;
