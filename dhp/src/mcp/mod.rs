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
mod stdio;
mod tools;

use dhp_core::TransportKind;
use dhp_core::{Config, Error, Runner};
use std::path::PathBuf;

/// Arguments of `dhp mcp`.
#[derive(clap::Args)]
pub struct McpArgs {
    /// The DHP store directory (must hold a store, or be an empty
    /// directory, unless --create).
    #[arg(long)]
    pub root: PathBuf,
    /// Create ROOT and a new store if there is none.
    #[arg(long)]
    pub create: bool,
    /// Serve the human or policy engine that decides approval requests:
    /// only dhp_approve, dhp_deny, dhp_approval_status, dhp_status and
    /// dhp_health. Without it the decisions are not offered at all, so an
    /// agent cannot approve its own request.
    #[arg(long)]
    pub decider: bool,
}

/// Serve until the client closes stdin. stdout carries only MCP frames;
/// logs go to stderr.
pub fn run(a: McpArgs, cfg: Config) -> Result<(), crate::failure::Failure> {
    // The holder name of this runner is never used for ownership: every
    // tool that touches a lease re-binds it to the caller's worker_id.
    // on PostgreSQL every store call is bounded (crate::bound)
    let opened = crate::bound::open_watched(&a.root, crate::create_mode(a.create))?;
    let runner = Runner::new(opened.backend, "dhp-mcp", cfg)?;
    let role = if a.decider { tools::Role::Decider } else { tools::Role::Agent };
    let shown = dhp_core::store::location::mask_secrets(&a.root.display().to_string());
    tracing::info!(root = %shown, ?role, "dhp mcp serving");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| {
        Error::transport_from(TransportKind::Start, format!("mcp: cannot start the async runtime: {e}"), e)
    })?;
    let served = rt.block_on(server::serve(runner, role));
    // stdin may still be open (a blocking read): do not wait for it.
    rt.shutdown_background();
    Ok(served?)
}
