//! No code: this crate only pins the union of the workspace's dependency
//! features, so that every build reuses the same compiled dependencies.
//! See `Cargo.toml`.
