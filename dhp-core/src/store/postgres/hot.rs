//! The worker's hot calls (a checkpoint, its envelope read, a heartbeat):
//! each one statement, its own implicit transaction, sent on the lane
//! ([`super::lane`]) when it is open, else on the store's main connection
//! as before. Both give the same row, read here by column.

use super::lane::{Lane, LaneError, Param, RawRow, Stmt};
use super::{Conn, PgStore};
use crate::error::{Error, Result};
use crate::store::{OwnerSeen, Ownership};
use postgres::error::SqlState;
use postgres::types::ToSql;
use postgres::Row;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A SQLSTATE after which the lane's call is left to the main connection:
/// the function is gone (then the flag is cleared, as there).
const UNDEFINED_FUNCTION: &str = "42883";
/// The lane's prepared statement is gone (a `DISCARD ALL` by a pooler).
const INVALID_STATEMENT_NAME: &str = "26000";

/// How long after a failed attempt to open the lane it is tried again.
const LANE_RETRY: Duration = Duration::from_secs(1);

/// The lane's slot in a store handle.
#[derive(Default)]
pub(crate) struct LaneSlot {
    lane: Option<Lane>,
    /// The configuration cannot be served by the lane (for good).
    off: bool,
    /// After a failed attempt: not before then.
    retry_at: Option<Instant>,
}

/// A row from either connection.
pub(super) enum AnyRow {
    Main(Row),
    Lane(RawRow),
}

impl AnyRow {
    fn get<T>(
        &self,
        name: &str,
        main: impl FnOnce(&Row) -> std::result::Result<Option<T>, postgres::Error>,
        lane: impl FnOnce(&RawRow) -> std::result::Result<Option<T>, LaneError>,
    ) -> Result<Option<T>> {
        match self {
            AnyRow::Main(r) => main(r).map_err(Error::from),
            AnyRow::Lane(r) => lane(r).map_err(|e| Error::from(LaneError::Protocol(format!("{name}: {e}")))),
        }
    }
    pub(super) fn text(&self, i: usize, name: &str) -> Result<Option<String>> {
        self.get(name, |r| r.try_get(i), |r| r.text(i))
    }
    pub(super) fn int8(&self, i: usize, name: &str) -> Result<Option<i64>> {
        self.get(name, |r| r.try_get(i), |r| r.int8(i))
    }
    pub(super) fn float8(&self, i: usize, name: &str) -> Result<Option<f64>> {
        self.get(name, |r| r.try_get(i), |r| r.float8(i))
    }
    pub(super) fn boolean(&self, i: usize, name: &str) -> Result<Option<bool>> {
        self.get(name, |r| r.try_get(i), |r| r.boolean(i))
    }
}

/// What a function read under the lock: its first eight OUT columns
/// (`o_holder` … `now_s`).
pub(super) fn seen(r: &AnyRow, hid: &str) -> Result<OwnerSeen> {
    let missing = |what: &str| Error::from(LaneError::Protocol(format!("{what} is NULL")));
    let ownership = match r.text(0, "o_holder")? {
        None => None,
        Some(holder) => Some(Ownership {
            hid: hid.to_string(),
            holder,
            fence: crate::lease::Fence::new(r.int8(1, "o_fence")?.ok_or_else(|| missing("o_fence"))?),
            lease_expires_at: r.float8(2, "o_lease")?.ok_or_else(|| missing("o_lease"))?,
            heartbeat_interval_s: r.float8(3, "o_interval")?.ok_or_else(|| missing("o_interval"))?,
            max_missed: r.int8(4, "o_max_missed")?.ok_or_else(|| missing("o_max_missed"))?,
        }),
    };
    let exists = r.boolean(5, "h_exists")?.ok_or_else(|| missing("h_exists"))?;
    Ok(OwnerSeen {
        ownership,
        status: if exists { Some(r.text(6, "h_status")?.unwrap_or_default()) } else { None },
        now: r.float8(7, "now_s")?.ok_or_else(|| missing("now_s"))?,
    })
}

impl PgStore {
    /// Run `stmt` as its own implicit transaction, on the lane when it is
    /// open: `Ok(None)` when `flag` says the function is not available
    /// (never created, or dropped since), else its row, if any.
    pub(super) fn hot(&self, flag: &AtomicBool, stmt: &Stmt, params: &[Param<'_>]) -> Result<Option<Option<AnyRow>>> {
        if !flag.load(Ordering::Relaxed) {
            return Ok(None);
        }
        if let Some(row) = self.lane_call(flag, stmt, params)? {
            return Ok(Some(row.map(AnyRow::Lane)));
        }
        if !flag.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let args: Vec<&(dyn ToSql + Sync)> = params.iter().map(as_sql).collect();
        self.main_call(flag, stmt.sql, &args).map(|r| r.map(|r| r.map(AnyRow::Main)))
    }

    /// `stmt` on the lane: `None` when the lane does not serve it (a
    /// configuration it cannot speak, no connection now, the function
    /// gone: the main connection does).
    fn lane_call(&self, flag: &AtomicBool, stmt: &Stmt, params: &[Param<'_>]) -> Result<Option<Option<RawRow>>> {
        let mut slot = self.lane.lock().unwrap_or_else(|p| p.into_inner());
        let Some(lane) = self.lane_open(&mut slot) else { return Ok(None) };
        match lane.call(stmt, params) {
            Ok(row) => Ok(Some(row)),
            Err(e) if matches!(e.code(), Some(UNDEFINED_FUNCTION | INVALID_STATEMENT_NAME)) => {
                if e.code() == Some(UNDEFINED_FUNCTION) {
                    flag.store(false, Ordering::Relaxed);
                }
                slot.lane = None;
                Ok(None)
            }
            Err(e) => {
                // A server error leaves the session usable; anything else
                // (or a server that stopped taking writes) ends the lane,
                // and the next call opens another.
                let server_said = matches!(e, LaneError::Db { .. });
                let e = Error::from(e);
                if !server_said || e.is_server_lost() {
                    slot.lane = None;
                }
                Err(e)
            }
        }
    }

    /// The open lane, opening it when due.
    fn lane_open<'a>(&self, slot: &'a mut LaneSlot) -> Option<&'a mut Lane> {
        if slot.off {
            return None;
        }
        if slot.lane.is_none() {
            if slot.retry_at.is_some_and(|t| Instant::now() < t) {
                return None;
            }
            let timeout = self.config.get_connect_timeout().copied().unwrap_or(super::DEFAULT_CONNECT_TIMEOUT);
            match Lane::open(&self.config, timeout) {
                Ok(Some(lane)) => {
                    slot.lane = Some(lane);
                    slot.retry_at = None;
                }
                Ok(None) => {
                    tracing::debug!("no lane for this configuration: hot calls use the main connection");
                    slot.off = true;
                }
                Err(e) => {
                    // Unreachable or refused: the main connection serves the
                    // call (and reports a lost server as it does); retried.
                    tracing::debug!(error = %e, "cannot open the lane");
                    slot.retry_at = Some(Instant::now() + LANE_RETRY);
                }
            }
        }
        slot.lane.as_mut()
    }

    /// `sql` on the main connection, gated by `flag` (cleared when the
    /// function is gone).
    fn main_call(
        &self,
        flag: &AtomicBool,
        sql: &'static str,
        args: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Option<Row>>> {
        let mut guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let conn = self.connected(&mut guard)?;
        match run(conn, sql, args) {
            Ok(row) => Ok(Some(row)),
            Err(e) if e.code() == Some(&SqlState::UNDEFINED_FUNCTION) => {
                flag.store(false, Ordering::Relaxed);
                conn.stmts.remove(sql);
                Ok(None)
            }
            Err(e) => {
                let e = Error::from(e);
                // Reconnect on the next call (see `PgStore::transact`).
                if e.is_server_lost() || conn.client.is_closed() {
                    *guard = None;
                }
                Err(e)
            }
        }
    }
}

/// A lane parameter as the `postgres` crate takes it.
fn as_sql<'a>(p: &'a Param<'_>) -> &'a (dyn ToSql + Sync) {
    match p {
        Param::I4(x) => x,
        Param::I8(x) => x,
        Param::F8(x) => x,
        Param::T(s) => s,
    }
}

/// Prepared once per connection, then one Bind/Execute/Sync per call.
fn run(
    conn: &mut Conn,
    sql: &'static str,
    args: &[&(dyn ToSql + Sync)],
) -> std::result::Result<Option<Row>, postgres::Error> {
    let st = match conn.stmts.get(sql) {
        Some(s) => s.clone(),
        None => {
            let s = conn.client.prepare(sql)?;
            conn.stmts.insert(sql, s.clone());
            s
        }
    };
    conn.client.query_opt(&st, args)
}
