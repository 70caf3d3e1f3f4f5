//! The store family's steps: a race of fresh processes to create one new
//! store, a store marked with a newer schema version, and a write while
//! the runner holds the SQLite write lock. The model has no store to
//! create or lock: each expects what §3.1 says (every opener opens; a
//! newer schema is refused; a checkpoint waits for the lock), and the rest of the
//! sequence goes on as if nothing happened.

use super::gen::Step;
use super::run::Got;
use super::run_extra::Io;
use super::world::World;
use crate::assertions::core::race;
use crate::check::{Check, Fail};
use crate::client::Reply;
use serde_json::json;
use std::time::Duration;

/// How long the runner holds the write lock (well under a busy timeout).
const LOCK_HELD: Duration = Duration::from_millis(400);

/// Send a store step.
pub fn send(io: &mut Io<'_, '_>, w: &World, step: &Step) -> Check<Vec<(u8, Got)>> {
    match step {
        Step::OpenRace { n } => open_race(io, *n),
        Step::NewerSchema => newer_schema(io),
        Step::LockedWrite { h, w: x } => locked_write(io, w, *h, *x),
        _ => Ok(Vec::new()),
    }
}

fn open_race(io: &mut Io<'_, '_>, n: u8) -> Check<Vec<(u8, Got)>> {
    let fresh = io.cx.root(&format!("{}-created-{}", io.name, io.i))?;
    let mut racers = io.cx.fresh_many(usize::from(n))?;
    let replies = race(&mut racers, "open", |_| json!({"root": fresh}))?;
    Ok(replies
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let g = match r {
                Reply::Ok(v) => Ok(v),
                Reply::Err(e) => Err(e),
            };
            (i as u8, g)
        })
        .collect())
}

fn newer_schema(io: &mut Io<'_, '_>) -> Check<Vec<(u8, Got)>> {
    let db = io.cx.store(io.root)?.ok_or_else(|| Fail::Errored("a newer schema needs standard-store".into()))?;
    db.add_schema_version(4, io.cx.now())?;
    let reply = match io.cx.fresh_many(1)?.first_mut() {
        Some(p) => p.try_op("open", json!({"root": io.root})),
        None => Err(Fail::Errored("no fresh process".into())),
    };
    // the mark goes whatever the reply (an implementation that deleted it
    // has diverged already); the sequence goes on on a version-3 store
    db.drop_schema_version(4)?;
    Ok(vec![(0, reply?)])
}

fn locked_write(io: &mut Io<'_, '_>, w: &World, h: u8, x: u8) -> Check<Vec<(u8, Got)>> {
    let token = json!({"root": io.root, "worker": format!("w{x}"), "hid": w.hid(h),
                       "fence": w.presented_fence(h, x, false), "state": super::world::state_of(h, 9)});
    let file = std::path::Path::new(io.root).join("dhp.sqlite3");
    if io.root.starts_with("postgres") || !file.exists() {
        // no SQLite file to lock: the write alone
        return Ok(vec![(0, io.m.try_op("checkpoint", token)?)]);
    }
    let c = rusqlite::Connection::open(&file).map_err(|e| Fail::Errored(format!("{}: {e}", file.display())))?;
    c.execute_batch("BEGIN IMMEDIATE").map_err(|e| Fail::Errored(format!("taking the write lock: {e}")))?;
    let holder = std::thread::spawn(move || {
        std::thread::sleep(LOCK_HELD);
        c.execute_batch("COMMIT")
    });
    let reply = io.m.try_op("checkpoint", token);
    let released = holder.join().map_err(|_| Fail::Errored("the lock holder panicked".into()))?;
    released.map_err(|e| Fail::Errored(format!("releasing the write lock: {e}")))?;
    Ok(vec![(0, reply?)])
}
