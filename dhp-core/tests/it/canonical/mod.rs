//! Canonical JSON against the reference's, bytes for bytes.

mod differential;
mod float_ties;
