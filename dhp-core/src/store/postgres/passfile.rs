//! Where a PostgreSQL password comes from when the URL gives none, as
//! libpq does it (`PGPASSWORD`, `passfile=`, `PGPASSFILE`, `~/.pgpass`):
//! the `dhp-secrets` crate, shared with the harnesses so that they find a
//! password exactly as `dhp` does without linking dhp-core.

pub use dhp_secrets::passfile::*;
