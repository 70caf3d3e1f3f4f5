//! Operations cut between their statements, and their repair.

mod claim;
mod complete;
mod consistent;
mod lost_row;
mod mem_backend;
mod orphan;
mod orphan_unwritten;
mod release;
