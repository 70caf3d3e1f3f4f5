//! The TCP transport: group commit, the log cache, log links, error kinds.

mod ack_order;
mod deaf_client_shutdown;
mod error_kinds;
mod group_commit_stats;
mod log_cache_bounded;
mod logdir_links;
