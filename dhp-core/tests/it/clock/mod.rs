//! Lease, stall and leadership timing on the manual clock.

mod leadership_ttl;
mod lease_expiry;
mod stall_timeout;
