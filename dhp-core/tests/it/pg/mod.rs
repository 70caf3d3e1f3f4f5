//! The PostgreSQL backend: the one-trip functions, batches, TLS, standby wake-ups.

mod batch_abort;
mod checkpoint_v2;
mod lane;
mod one_trip_lock_race;
mod one_trip_refusals;
mod one_trip_upgrade;
mod standby_wakeup;
mod tls_require;
