//! # dhp-adapter-proto — the adapter protocol's messages as types
//!
//! What `dhp-conform` and an adapter say to each other (dhp-conform's
//! ADAPTERS.md): one JSON request per line on the adapter's stdin, one
//! JSON reply per line on its stdout. The wire is fixed — the reference's
//! adapter (Python) and third-party adapters speak it — and described by
//! the JSON Schemas in `spec/adapter/`; this crate's tests check these
//! types against those schemas both ways.
//!
//! - [`Op`]: the 39 operations; [`Request`]: one variant per op with its
//!   arguments ([`args`]); [`Response`]: one variant per op with its result
//!   ([`results`]), read with the op it answers (a result is not tagged).
//! - [`RequestLine`] and [`ReplyLine`]: the lines themselves (id, barrier
//!   time, clock offset; ok result or typed error).
//!
//! It depends on no implementation, so the judge and the judged can both
//! use it.

pub mod args;
mod error;
pub mod feature;
mod line;
mod ops;
pub mod results;

pub use error::ProtoError;
pub use line::{ErrorBody, ReplyLine, RequestLine};
pub use ops::{Op, Request, Response};

/// Version of the adapter protocol described in ADAPTERS.md.
pub const ADAPTER_PROTOCOL: i64 = 1;

/// `spec/adapter/request.schema.json`: every request line.
pub const REQUEST_SCHEMA: &str = include_str!("../../adapter/request.schema.json");
/// `spec/adapter/reply.schema.json`: every reply line at the root, an ok
/// result at `#/$defs/<op>`.
pub const REPLY_SCHEMA: &str = include_str!("../../adapter/reply.schema.json");
