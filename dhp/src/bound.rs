//! Bounds on a command's waits for a PostgreSQL store that stops answering.
//!
//! The server bounds what it runs (`statement_timeout`,
//! `idle_in_transaction_session_timeout`) and the store bounds every
//! connection's handshake (the connect timeout), but a link that
//! acknowledges every byte and never answers (a stopped postmaster behind a
//! proxy, a stuck pooler) blocks a read of the synchronous client for ever:
//! it has no read timeout. So every command on a PostgreSQL ROOT watches
//! its store calls from a thread of its own ([`Watchdog`]) and, when one
//! has waited longer than the statement timeout and a margin, exits with a
//! store error (exit 11). `dhp work` watches against the shorter lease
//! deadline instead (see `work.rs`).

use crate::failure::{wants_json, Failure};
use dhp_core::store::deadline::{expired, Watchdog};
use dhp_core::store::{open_root, OpenMode, OpenedRoot, StoreLocation};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a store call may take beyond the server's `statement_timeout`
/// before the command gives up on it (the server's own cancellation, when
/// it still answers, arrives first).
pub const CALL_MARGIN: Duration = Duration::from_secs(5);

/// How long a stopping command (its deadline reached, or SIGTERM/SIGINT)
/// may still wait for a store call before it exits anyway.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

fn as_json() -> bool {
    wants_json(&std::env::args_os().collect::<Vec<_>>())
}

/// Open ROOT as `mode` allows; on PostgreSQL, with every later call of the
/// store watched against `statement_timeout` (the URL's, if it sets one) +
/// [`CALL_MARGIN`] and the opening against the connect timeout and that
/// (see the module).
pub fn open_watched(root: &Path, mode: OpenMode) -> Result<OpenedRoot, Failure> {
    let StoreLocation::Postgres(pg) = StoreLocation::from_path(root)? else {
        return Ok(open_root(root, mode)?);
    };
    // the URL's own statement_timeout, if it sets one; 0 (none) leaves
    // the calls unwatched, as the operator asked
    let statement = dhp_core::store::postgres::effective_statement_timeout_ms(&pg.url);
    if statement == 0 {
        return Ok(open_root(root, mode)?);
    }
    let limit = Duration::from_millis(statement) + CALL_MARGIN;
    let connect = std::str::FromStr::from_str(&pg.url)
        .ok()
        .and_then(|c: postgres::Config| c.get_connect_timeout().copied())
        .unwrap_or(dhp_core::store::postgres::DEFAULT_CONNECT_TIMEOUT);
    // the opening runs its checks in one transaction after the handshake
    let dog = Watchdog::start(limit, connect + limit, move |e| Failure::from(e).exit(as_json()))?;
    let OpenedRoot { backend, dir } = {
        let _open = dog.connecting();
        open_root(root, mode)?
    };
    Ok(OpenedRoot { backend: dog.wrap(backend), dir })
}

/// A long-running command's last resort: once `stop` is set (SIGTERM,
/// SIGINT) or `end` has passed, the command has [`STOP_GRACE`] to return
/// (`done` set); if it is still waiting on the store then, it exits with a
/// store error (exit 11) saying so. Returns the flag to set when done.
pub fn exit_if_stuck(stop: Arc<AtomicBool>, end: Option<Instant>) -> Arc<AtomicBool> {
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let spawned = std::thread::Builder::new().name("dhp-stop-watch".into()).spawn(move || {
        let stopping = || stop.load(Ordering::SeqCst) || end.is_some_and(|e| Instant::now() >= e);
        while !stopping() {
            if d.load(Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let t = Instant::now();
        while t.elapsed() < STOP_GRACE {
            if d.load(Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let why = if stop.load(Ordering::SeqCst) { "a stop signal" } else { "the end of its run" };
        let mut f = Failure::from(expired(t.elapsed(), STOP_GRACE));
        f.message = format!("still waiting on the store {:.1} s after {why}: {}", STOP_GRACE.as_secs_f64(), f.message);
        f.exit(as_json())
    });
    if let Err(e) = spawned {
        tracing::warn!("cannot start the stop watch: {e}");
    }
    done
}
