//! `dhp mcp --root ROOT`: the DHP tools as a Model Context Protocol server
//! over stdio, tool-for-tool compatible with the reference's `dhp-mcp`
//! (same 18 tool names, parameters and reply shapes; see docs/mcp.md for
//! where it deliberately answers differently).
//!
//! This lives in the binary, not the library: the library's public API
//! never names an `rmcp` type, and the `mcp` cargo feature (default on)
//! can drop the SDK from a build entirely.

mod args;
mod calls;
mod server;
mod tools;

use dhp_core::store::OpenMode;
use dhp_core::TransportKind;
use dhp_core::{Config, Error, Runner};
use std::path::PathBuf;

/// Arguments of `dhp mcp`.
#[derive(clap::Args)]
pub struct McpArgs {
    /// The DHP store directory, created if missing (as the reference's
    /// `dhp-mcp --root` does).
    #[arg(long)]
    pub root: PathBuf,
}

/// Serve until the client closes stdin. stdout carries only MCP frames;
/// logs go to stderr.
pub fn run(a: McpArgs, cfg: Config) -> Result<(), crate::failure::Failure> {
    // The holder name of this runner is never used for ownership: every
    // tool that touches a lease re-binds it to the caller's worker_id.
    // on PostgreSQL every store call is bounded (crate::bound)
    let opened = crate::bound::open_watched(&a.root, OpenMode::Create)?;
    let runner = Runner::new(opened.backend, "dhp-mcp", cfg)?;
    let shown = dhp_core::store::location::mask_secrets(&a.root.display().to_string());
    tracing::info!(root = %shown, "dhp mcp serving");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| {
        Error::transport_from(TransportKind::Start, format!("mcp: cannot start the async runtime: {e}"), e)
    })?;
    Ok(rt.block_on(server::serve(runner))?)
}
