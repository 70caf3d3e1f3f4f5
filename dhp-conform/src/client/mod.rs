//! Adapter processes: spawning, the JSON-lines exchange, timeouts, and a
//! pool that reuses healthy processes across assertions.
//!
//! Anything that goes wrong *in the exchange* — the process will not start,
//! exits, hangs past the timeout, prints a line that is not JSON, answers
//! with another request's id, or sends a reply its schema rejects — is an
//! [`AdapterError`]: the assertion that hit it is reported as *errored*, not
//! failed, and the process is never reused. An implementation that answers
//! properly with an error is a [`Reply::Err`], judged by the assertion.

mod adapter;
mod clock;
mod error;
mod exchange;
mod hello;
mod pool;
mod profile;
mod stderr;

pub use adapter::Adapter;
pub use clock::ClockOffset;
pub use error::{AdapterError, ErrorReply, Reply};
pub use exchange::MAX_REPLY_LINE;
pub use hello::Hello;
pub use pool::{Lease, Pool};
pub use profile::Profile;
pub use stderr::StderrLog;
