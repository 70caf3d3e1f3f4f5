//! A write that meets another writer's lock waits for it and succeeds, as
//! the reference's writes do (`sqlite3.connect(timeout=30.0)`): the lock
//! is held by the runner itself, so no implementation can arrange to avoid
//! it.

use super::new_handoff;
use crate::check::{Check, Fail};
use crate::client::{Adapter, Reply};
use crate::suite::Ctx;
use crate::write_lock::HeldLock;
use crate::{ensure, ensure_eq};
use serde_json::json;
use std::time::{Duration, Instant};

/// How long the runner holds the lock: far above the few milliseconds a
/// writer that gives up early waits (dhp-core's busy handler polls every
/// 0.1–1 ms), far below the reference's 30 s, and short enough that the
/// write still answers within a tight `--timeout` (the runner's own tests
/// use 2 s).
const HOLD: Duration = Duration::from_millis(500);

/// `write` while the runner holds the store's write lock for [`HOLD`]: it
/// must succeed, and answer only after the runner let the lock go (an
/// answer before that means the write did not reach the locked store).
fn under_lock<T>(
    m: &mut Adapter,
    root: &str,
    hid: &str,
    what: &str,
    write: impl FnOnce(&mut Adapter) -> Check<T>,
) -> Check<T> {
    let lock = HeldLock::take(root, hid, HOLD)?;
    let out = write(m);
    let answered = Instant::now();
    let released = lock.released()?;
    let out = out.map_err(|f| {
        f.context(&format!(
            "{what} while another connection held the store's write lock for {} s (a writer must wait for the lock; \
             the reference waits up to 30 s)",
            HOLD.as_secs_f64()
        ))
    })?;
    ensure!(
        answered >= released,
        "{what} answered {:.3} s before the runner let go of the store's write lock: it did not write to the store the \
         runner locked",
        released.duration_since(answered).as_secs_f64()
    );
    Ok(out)
}

/// write-lock-wait
pub fn write_lock_wait(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    // opening a store that is up to date writes nothing: on SQLite another
    // process opens it while the store is locked (a worker starting while
    // others write), during the same hold as the claim
    let mut other = if crate::stores::is_postgres(&root) { None } else { Some(cx.fresh()?) };
    let t = under_lock(&mut m, &root, &hid, "claim", |m| {
        let open = match other.as_mut() {
            Some(o) => Some(o.send("open", json!({"root": root}), None)?),
            None => None,
        };
        let claimed = m.claim(&root, "w1", &hid);
        if let (Some(o), Some(id)) = (other.as_mut(), open) {
            if let Reply::Err(e) = o.recv(id, "open")? {
                return Err(Fail::failed(format!(
                    "open of an existing store while another connection held its write lock: refused with {e}"
                )));
            }
        }
        claimed
    })?;
    ensure_eq!(t.fence, 0, "fence of a claim that waited for the lock");
    if crate::stores::is_postgres(&root) {
        // PostgreSQL's lock is the handoffs row, which a checkpoint need
        // not write (it adds a checkpoints row): claim and complete do
        m.checkpoint(&t, json!({"k": 1}))?;
    } else {
        let seq = under_lock(&mut m, &root, &hid, "checkpoint", |m| m.checkpoint(&t, json!({"k": 1})))?;
        ensure_eq!(seq, 0, "seq of a checkpoint that waited for the lock");
    }
    under_lock(&mut m, &root, &hid, "complete", |m| m.complete(&t, json!({"x": 1})))?;
    let st = m.status(&root, &hid)?;
    ensure_eq!(st["status"], json!("completed"), "status after writes that waited for the lock");
    ensure_eq!(st["checkpoints"], json!(1), "checkpoints after writes that waited for the lock");
    ensure_eq!(st["result"], json!({"x": 1}), "result after writes that waited for the lock");
    let db = cx.store(&root)?.ok_or_else(|| Fail::Skipped("needs standard-store".into()))?;
    ensure_eq!(db.status(&hid)?, "completed", "stored status");
    ensure_eq!(db.verified_states(&hid)?, vec![(0, json!({"k": 1}))], "stored checkpoints");
    Ok(())
}
