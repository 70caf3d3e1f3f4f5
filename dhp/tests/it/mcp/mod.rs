//! The `dhp` program's mcp scenarios.

mod approval_expiry;
mod bad_args;
mod bad_lines;
mod interop_session;
mod rust_client;
mod session_binding;
mod two_servers;
