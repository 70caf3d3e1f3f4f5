//! What the mutant worker writes around the store's API: raw SQL on the
//! SQLite file (recover without the compare-and-set, checkpoints with no
//! fence or no fsync, complete with no check) and a PostgreSQL liveness
//! listing without its lock.

use anyhow::{bail, Context, Result};
use dhp_core::envelope::utcnow_iso;
use dhp_core::{json, Config};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// The SQLite connection of the modes that write around the store's API.
pub(crate) fn sql(c: &mut Option<Connection>) -> Result<&mut Connection> {
    c.as_mut().context("this mode writes no SQL of its own")
}

pub(crate) fn db(root: &Path) -> Result<Connection> {
    let c = Connection::open(root.join("dhp.sqlite3"))?;
    c.busy_timeout(Duration::from_secs(30))?;
    Ok(c)
}

/// Recover `hid` with no compare-and-set: whoever holds it, take it with
/// fence + 1 (status running, attempt + 1, like a real recover). With
/// `from_tombstone`, only from the orphan tombstone, and the fence kept.
pub(crate) fn recover_without_cas(
    root: &Path,
    hid: &str,
    me: &str,
    cfg: &Config,
    from_tombstone: bool,
) -> anyhow::Result<i64> {
    let mut c = db(root)?;
    let t = dhp_core::envelope::now();
    // read outside the write lock, as a racing recoverer without a CAS would
    let (text, fence): (String, i64) = c.query_row(
        "SELECT h.envelope_json, o.fence FROM handoffs h JOIN ownership o ON o.hid = h.hid WHERE h.hid = ?1",
        [hid],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let mut env = json::parse(&text)?;
    match env.pointer("/execution/status").and_then(Value::as_str) {
        Some("orphaned") | Some("running") => {}
        other => bail!("cannot recover a handoff in status {other:?}"),
    }
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let fence: i64 = tx.query_row("SELECT fence FROM ownership WHERE hid = ?1", [hid], |r| r.get(0)).unwrap_or(fence);
    let fence = if from_tombstone { fence } else { fence + 1 };
    let ttl = cfg.lease_interval_s * cfg.lease_max_missed as f64;
    let cas = if from_tombstone { " AND holder = '__orphaned__'" } else { "" };
    let n = tx.execute(
        &format!(
            "UPDATE ownership SET holder = ?1, fence = ?2, lease_expires_at = ?3, updated_at = ?4 WHERE hid = ?5{cas}"
        ),
        params![me, fence, t + ttl, t, hid],
    )?;
    if from_tombstone && n != 1 {
        bail!("recover lost: {hid} is not orphaned");
    }
    let ex = env["execution"].as_object_mut().context("envelope has no execution")?;
    let attempt = ex.get("attempt").and_then(Value::as_i64).unwrap_or(0);
    ex.insert("status".into(), json!("running"));
    ex.insert("attempt".into(), json!(attempt + 1));
    ex.insert("runner_id".into(), json!(me));
    ex.insert("claimed_at".into(), json!(t));
    ex.insert("fence".into(), json!(fence));
    tx.execute(
        "UPDATE handoffs SET envelope_json = ?1, updated_at = ?2 WHERE hid = ?3",
        params![json::dumps(&env)?, t, hid],
    )?;
    tx.commit()?;
    Ok(fence)
}

/// INSERT `hid`'s next checkpoint (seq one past the last) in `tx`; its seq.
fn insert_next(tx: &rusqlite::Transaction<'_>, hid: &str, text: &str, hash: &str) -> Result<i64> {
    let seq: i64 =
        tx.query_row("SELECT COALESCE(MAX(seq), -1) + 1 FROM checkpoints WHERE hid = ?1", [hid], |r| r.get(0))?;
    tx.execute(
        "INSERT INTO checkpoints (hid, seq, state_json, state_hash, at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![hid, seq, text, hash, utcnow_iso()],
    )?;
    Ok(seq)
}

/// INSERT the next checkpoint with no ownership check at all.
pub(crate) fn write_checkpoint_unfenced(c: &mut Connection, hid: &str, state: &Value) -> Result<i64> {
    let (text, hash) = json::state_text_and_hash(state)?;
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let seq = insert_next(&tx, hid, &text, &hash)?;
    tx.commit()?;
    Ok(seq)
}

/// INSERT the next checkpoint if `holder` still holds `hid` at `fence`
/// (checked in the same transaction), on a connection that never fsyncs.
pub(crate) fn write_checkpoint_unsynced(
    c: &mut Connection,
    hid: &str,
    holder: &str,
    fence: i64,
    state: &Value,
) -> Result<i64> {
    let (text, hash) = json::state_text_and_hash(state)?;
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let own: Option<(String, i64)> = tx
        .query_row("SELECT holder, fence FROM ownership WHERE hid = ?1", [hid], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    if own.as_ref() != Some(&(holder.to_string(), fence)) {
        bail!("fenced: {hid} is held by {own:?}, not {holder} at fence {fence}");
    }
    let seq = insert_next(&tx, hid, &text, &hash)?;
    tx.commit()?;
    Ok(seq)
}

/// Mark the handoff completed with `result`, with no ownership or status check.
pub(crate) fn write_complete_unfenced(c: &mut Connection, hid: &str, result: &Value) -> Result<()> {
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let text: String = tx.query_row("SELECT envelope_json FROM handoffs WHERE hid = ?1", [hid], |r| r.get(0))?;
    let mut env = json::parse(&text)?;
    env["execution"]["status"] = json!("completed");
    env["execution"]["completed_at"] = json!(utcnow_iso());
    env["delivery"]["outbox"] = json!({"ack": false});
    env["delivery"]["result"] = result.clone();
    tx.execute(
        "UPDATE handoffs SET envelope_json = ?1, updated_at = ?2 WHERE hid = ?3",
        params![json::dumps(&env)?, dhp_core::envelope::now(), hid],
    )?;
    tx.execute("DELETE FROM ownership WHERE hid = ?1", [hid])?;
    tx.commit()?;
    Ok(())
}

/// List `holder` in a PostgreSQL store's `liveness` table the way a token
/// does, but without taking the advisory lock that proves it alive.
pub(crate) fn list_without_lock(root: &Path, holder: &str) -> Result<()> {
    let text = root.to_str().context("store location is not UTF-8")?;
    let loc = match dhp_core::store::StoreLocation::parse(text)? {
        dhp_core::store::StoreLocation::Postgres(p) => p,
        _ => bail!("unheld-liveness needs a PostgreSQL store"),
    };
    let mut c = pg_connect(&loc.url, &loc.schema)?;
    let key = dhp_core::store::postgres::live::lock_key(&loc.schema, holder);
    c.execute(
        "INSERT INTO liveness (holder, lock_key, published_at) VALUES ($1, $2, extract(epoch FROM clock_timestamp())::float8) \
         ON CONFLICT (holder) DO UPDATE SET lock_key = excluded.lock_key, published_at = excluded.published_at",
        &[&holder, &key],
    )?;
    Ok(())
}

/// A connection to the store's database with `search_path` at its schema,
/// the password found as `dhp` finds it (the URL's, else PGPASSWORD, else
/// the password file).
fn pg_connect(url: &str, schema: &str) -> Result<postgres::Client> {
    let (bare, passfile) = dhp_secrets::passfile::split_passfile(url);
    let mut cfg: postgres::Config = bare.parse().context("parsing the store's URL")?;
    dhp_secrets::passfile::fill_password(&mut cfg, passfile.as_deref());
    if cfg.get_connect_timeout().is_none() {
        cfg.connect_timeout(Duration::from_secs(5));
    }
    let mut c = cfg.connect(postgres::NoTls).context("connecting to the store's database")?;
    c.batch_execute(&format!("SET search_path TO \"{schema}\""))?;
    Ok(c)
}
