//! write-lock-gives-up: a write that finds the store's write lock held by
//! another connection fails at once (a busy timeout of 0) instead of
//! waiting. Before the real claim, checkpoint or complete, it looks at the
//! lock the way dhp-core takes it — after dhp-core's own serialisation
//! (the writer `flock` on SQLite, the handoff's advisory lock on
//! PostgreSQL), so only a writer outside dhp-core can be found holding it
//! — and gives up if it is held.
//!
//! create-loser-fails: opening a root without a store claims the store
//! file with an exclusive create first, and an opener that loses that race
//! to another process reports an error instead of opening the winner's
//! store.

use super::{Mutant, MutantAdapter};
use crate::adapter::{err, s, R};
use crate::pg::{is_postgres, split_schema};
use dhp_adapter_proto::Op;
use dhp_core::store::sqlite::{DB_FILE, WRITER_LOCK_FILE};
use nix::fcntl::{Flock, FlockArg};
use rusqlite::{Connection, ErrorCode, OpenFlags};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

pub(super) fn handle(ad: &mut MutantAdapter, op: Op, a: &Value) -> Option<R> {
    match (ad.m, op) {
        (Mutant::WriteLockGivesUp, Op::Claim | Op::Checkpoint | Op::Complete) => Some(give_up_if_locked(ad, op, a)),
        (Mutant::CreateLoserFails, Op::Open) => Some(open_or_lose(ad, a)),
        _ => None,
    }
}

fn open_or_lose(ad: &mut MutantAdapter, a: &Value) -> R {
    let root = s(a, "root")?;
    let db = Path::new(root).join(DB_FILE);
    if !is_postgres(root) && !db.exists() {
        // the claim stays: every opener that finds no store while the
        // winner is still creating it loses
        let claim = Path::new(root).join(format!("{DB_FILE}.creating"));
        if let Err(e) = std::fs::OpenOptions::new().write(true).create_new(true).open(&claim) {
            return Err(err("StoreError", format!("{}: another process is creating the store: {e}", db.display())));
        }
    }
    ad.inner.handle_args(Op::Open, a)
}

fn give_up_if_locked(ad: &mut MutantAdapter, op: Op, a: &Value) -> R {
    let (root, hid) = (s(a, "root")?, s(a, "hid")?);
    let locked = if is_postgres(root) { pg_row_locked(root, hid) } else { sqlite_locked(Path::new(root)) };
    if locked {
        return Err(err(
            "StoreError",
            format!("{op}: the store is locked by another writer (gave up without waiting)"),
        ));
    }
    ad.inner.handle_args(op, a)
}

/// `BEGIN IMMEDIATE` with no busy timeout, holding dhp-core's writer
/// `flock` as dhp-core's writers do. Anything else that goes wrong (no
/// store yet) is left for the real operation to report.
fn sqlite_locked(root: &Path) -> bool {
    let Ok(file) =
        std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(root.join(WRITER_LOCK_FILE))
    else {
        return false;
    };
    let _flock = Flock::lock(file, FlockArg::LockExclusive).ok();
    let Ok(conn) = Connection::open_with_flags(
        root.join(DB_FILE),
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    ) else {
        return false;
    };
    if conn.busy_timeout(Duration::ZERO).is_err() {
        return false;
    }
    match conn.execute_batch("BEGIN IMMEDIATE") {
        Ok(()) => {
            let _ = conn.execute_batch("ROLLBACK");
            false
        }
        Err(rusqlite::Error::SqliteFailure(f, _)) => f.code == ErrorCode::DatabaseBusy,
        Err(_) => false,
    }
}

/// The handoff's row `FOR UPDATE NOWAIT`, under the handoff's advisory
/// lock as dhp-core's writers take it.
fn pg_row_locked(url: &str, hid: &str) -> bool {
    let (_, Some(schema)) = split_schema(url) else { return false };
    let Ok(mut c) = crate::pg::client(url) else { return false };
    let Ok(mut tx) = c.transaction() else { return false };
    let (store, item) = dhp_core::store::postgres::advisory_keys(&schema, hid);
    let ident = schema.replace('"', "\"\"");
    if tx.batch_execute(&format!("SET LOCAL search_path TO \"{ident}\"")).is_err()
        || tx.execute("SELECT pg_advisory_xact_lock($1::int4, $2::int4)", &[&store, &item]).is_err()
    {
        return false;
    }
    match tx.query("SELECT 1 FROM handoffs WHERE hid = $1 FOR UPDATE NOWAIT", &[&hid]) {
        Ok(_) => false,
        Err(e) => e.code() == Some(&postgres::error::SqlState::LOCK_NOT_AVAILABLE),
    }
}
