//! The `dhp` program's interop scenarios.

mod concurrent_store;
mod supervisors;
mod torn_interop_reference;
mod torn_interop_reference_claim;
