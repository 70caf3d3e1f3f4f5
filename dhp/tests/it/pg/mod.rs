//! The `dhp` program's pg scenarios.

mod application_name;
mod bad_connection;
mod cli;
mod clock_skew;
mod db_restart;
mod foreign_layout;
mod hung_server;
mod kill_mid_tx;
mod link_blackhole;
mod liveness;
mod multi_host;
mod password_sources;
mod recover_race;
mod ride_lost_reply;
mod ride_switchover;
mod secret_masking;
mod stopped_in_tx;
mod tls_plain_server;
mod tls_verify_full;
mod tls_wrong_ca;
mod unix_socket;
