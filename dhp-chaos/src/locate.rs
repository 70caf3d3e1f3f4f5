//! Finding the `dhp` binary: `--dhp PATH`, else next to the current
//! executable (`target/<profile>/dhp`, also from `target/<profile>/deps/`),
//! (re)built with cargo under `cargo run`/`cargo test` — the shared
//! implementation is [`dhp_core::locate::dhp`].

use anyhow::Result;
use std::path::{Path, PathBuf};

/// The `dhp` binary for the round's workers and supervisors.
pub fn dhp_binary(explicit: Option<&Path>) -> Result<PathBuf> {
    let p = dhp_core::locate::dhp(explicit, &mut |m| eprintln!("dhp-chaos: {m}"))?;
    Ok(p.canonicalize().unwrap_or(p))
}
