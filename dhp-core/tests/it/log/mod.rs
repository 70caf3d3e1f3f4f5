//! Handoff logs that must be refused.

mod conflicting_duplicate;
mod mixed_headers;
