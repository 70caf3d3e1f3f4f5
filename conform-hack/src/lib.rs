//! Feature unification for dhp-conform's dependencies (see Cargo.toml): no code.
