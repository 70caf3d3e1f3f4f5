//! Server-side functions: a checkpoint and a heartbeat as ONE statement,
//! hence one round trip and one implicit transaction (no BEGIN, no
//! COMMIT message: the statement commits when it ends). A checkpoint that
//! counts steps takes two: a read of the envelope text (and its md5), then
//! the function, given the new text the runner made from it, which writes
//! only if the stored text still has that md5 (else the client-side
//! transaction runs).
//!
//! Each function takes the handoff's transaction-level advisory lock, reads
//! the server clock, the ownership row and the status — exactly what the
//! client-side transaction reads first — and writes only when the runner's
//! checks would pass (holder and fence match, lease not expired, status
//! `running`; for a checkpoint the next seq under the cap). It returns what
//! it read, and the runner judges that with its own checks, so refusals are
//! the same typed errors as on every backend. PL/pgSQL runs each statement
//! with a fresh snapshot at `READ COMMITTED`, so the reads after the lock
//! see everything committed before it was granted: the CAS of the
//! client-side transaction (a single SQL statement could not do this: its
//! snapshot predates the lock).
//!
//! The functions live in the store's schema and name their tables
//! schema-qualified. Their names carry a version (`_v1`): a changed body
//! gets a new name, so processes of different versions can share a store.
//! They are created at open when missing (`CREATE OR REPLACE`, under the
//! store's init lock): a v3 store created before them is upgraded in place.
//! Without the privilege to create them the store still works, through the
//! client-side transactions.
//!
//! `dhp_checkpoint_v2` is `_v1`'s checkpoint at less server CPU (issue 49):
//! a named composite result (its tuple descriptor is cached, not rebuilt
//! from ten OUT parameters per call), the lock taken by an assignment (a
//! simple expression, no executor start-up), the next seq (`ORDER BY seq
//! DESC LIMIT 1`) read with the handoff's status, the progress row
//! updated and inserted only when missing: four executor statements
//! instead of six (callgrind, benches/README.md: 8 % fewer instructions
//! per call). Same inputs, same row. It is used when present; `_v1` stays, for processes of
//! older versions sharing the store and for stores where it cannot be
//! created.

use super::hot::{seen, AnyRow};
use super::lane::{Param, Stmt, BOOL, FLOAT8, INT4, INT8, TEXT};
use super::{item_key, PgStore};
use crate::error::Result;
use crate::store::{CheckpointOnce, CheckpointReq, HeartbeatOnce};
use postgres::Transaction;

/// Signatures, as `to_regprocedure` reads them (schema-qualified at use).
const SIGNATURES: [&str; 3] = [
    "dhp_checkpoint_v1(int4, int4, text, text, int8, text, text, text, int8)",
    "dhp_checkpoint_steps_v1(int4, int4, text, text, int8, text, text, text, int8, text, text, float8)",
    "dhp_heartbeat_v1(int4, int4, text, text, int8)",
];

pub(super) const CHECKPOINT_V2: &str = "dhp_checkpoint_v2(int4, int4, text, text, int8, text, text, text, int8)";

pub(super) const CHECKPOINT_V2_CALL: Stmt = Stmt {
    name: "dhp_checkpoint_v2",
    sql: "SELECT * FROM dhp_checkpoint_v2($1::int4, $2::int4, $3::text, $4::text, $5::int8, $6::text, $7::text, \
          $8::text, $9::int8)",
    params: &[INT4, INT4, TEXT, TEXT, INT8, TEXT, TEXT, TEXT, INT8],
    results: &[TEXT, INT8, FLOAT8, FLOAT8, INT8, BOOL, TEXT, FLOAT8, INT8, BOOL],
};
pub(super) const CHECKPOINT_CALL: Stmt = Stmt {
    name: "dhp_checkpoint_v1",
    sql: "SELECT * FROM dhp_checkpoint_v1($1::int4, $2::int4, $3::text, $4::text, $5::int8, $6::text, $7::text, \
          $8::text, $9::int8)",
    params: CHECKPOINT_V2_CALL.params,
    results: CHECKPOINT_V2_CALL.results,
};
pub(super) const CHECKPOINT_STEPS_CALL: Stmt = Stmt {
    name: "dhp_checkpoint_steps_v1",
    sql: "SELECT * FROM dhp_checkpoint_steps_v1($1::int4, $2::int4, $3::text, $4::text, $5::int8, $6::text, \
          $7::text, $8::text, $9::int8, $10::text, $11::text, $12::float8)",
    params: &[INT4, INT4, TEXT, TEXT, INT8, TEXT, TEXT, TEXT, INT8, TEXT, TEXT, FLOAT8],
    results: &[TEXT, INT8, FLOAT8, FLOAT8, INT8, BOOL, TEXT, FLOAT8, INT8, BOOL, FLOAT8],
};
pub(super) const ENVELOPE_READ: Stmt = Stmt {
    name: "dhp_envelope_read",
    sql: "SELECT envelope_json, md5(envelope_json) FROM handoffs WHERE hid = $1",
    params: &[TEXT],
    results: &[TEXT, TEXT],
};
pub(super) const HEARTBEAT_CALL: Stmt = Stmt {
    name: "dhp_heartbeat_v1",
    sql: "SELECT * FROM dhp_heartbeat_v1($1::int4, $2::int4, $3::text, $4::text, $5::int8)",
    params: &[INT4, INT4, TEXT, TEXT, INT8],
    results: &[TEXT, INT8, FLOAT8, FLOAT8, INT8, BOOL, TEXT, FLOAT8, FLOAT8],
};

/// The lock, the clock, and what the owner checks read (OUT parameters
/// `o_holder` … `now_s`); `%S` is the quoted schema.
const PROLOGUE: &str = r#"
    PERFORM pg_advisory_xact_lock(p_store, p_item);
    now_s := extract(epoch FROM clock_timestamp())::float8;
    SELECT o.holder, o.fence, o.lease_expires_at, o.heartbeat_interval_s, o.max_missed
      INTO o_holder, o_fence, o_lease, o_interval, o_max_missed
      FROM %S.ownership o WHERE o.hid = p_hid;
    SELECT true, h.status INTO h_exists, h_status FROM %S.handoffs h WHERE h.hid = p_hid;
    h_exists := coalesce(h_exists, false);
    -- The runner's checks (fence, lease, status); refused: nothing written.
    IF o_holder IS DISTINCT FROM p_holder OR o_fence IS DISTINCT FROM p_fence OR o_lease < now_s
       OR NOT h_exists OR h_status IS DISTINCT FROM 'running' THEN
        RETURN;
    END IF;
"#;

const OWNER_OUTS: &str = "OUT o_holder text, OUT o_fence int8, OUT o_lease float8, OUT o_interval float8, \
                          OUT o_max_missed int8, OUT h_exists boolean, OUT h_status text, OUT now_s float8";

/// `CREATE OR REPLACE FUNCTION` statements for `schema` (already checked to
/// be `[a-z0-9_]`, so quoting it is enough).
pub fn functions_sql(schema: &str) -> String {
    let q = format!("\"{schema}\"");
    let prologue = PROLOGUE.replace("%S", &q);
    format!(
        r#"
CREATE OR REPLACE FUNCTION {q}.dhp_checkpoint_v1(
    p_store int4, p_item int4, p_hid text, p_holder text, p_fence int8,
    p_state_json text, p_state_hash text, p_at text, p_max int8,
    {OWNER_OUTS}, OUT next_seq int8, OUT inserted boolean)
LANGUAGE plpgsql VOLATILE AS $dhp$
BEGIN
    inserted := false;
{prologue}
    SELECT COALESCE(MAX(c.seq), -1) + 1 INTO next_seq FROM {q}.checkpoints c WHERE c.hid = p_hid;
    IF next_seq >= p_max THEN
        RETURN;
    END IF;
    INSERT INTO {q}.checkpoints (hid, seq, state_json, state_hash, at)
        VALUES (p_hid, next_seq, p_state_json, p_state_hash, p_at) ON CONFLICT (hid, seq) DO NOTHING;
    inserted := FOUND;
    IF inserted THEN
        -- A checkpoint resets the stall clock and the digest counter.
        INSERT INTO {q}.progress (hid, last_checkpoint_at, last_digest, digest_repeat_count, updated_at)
            VALUES (p_hid, now_s, NULL, 0, now_s)
            ON CONFLICT (hid) DO UPDATE SET last_checkpoint_at = excluded.last_checkpoint_at,
                digest_repeat_count = 0, updated_at = excluded.updated_at;
    END IF;
END
$dhp$;
CREATE OR REPLACE FUNCTION {q}.dhp_checkpoint_steps_v1(
    p_store int4, p_item int4, p_hid text, p_holder text, p_fence int8,
    p_state_json text, p_state_hash text, p_at text, p_max int8,
    p_env_md5 text, p_env_json text, p_env_at float8,
    {OWNER_OUTS}, OUT next_seq int8, OUT inserted boolean, OUT new_lease float8)
LANGUAGE plpgsql VOLATILE AS $dhp$
BEGIN
    inserted := false;
{prologue}
    SELECT COALESCE(MAX(c.seq), -1) + 1 INTO next_seq FROM {q}.checkpoints c WHERE c.hid = p_hid;
    IF next_seq >= p_max THEN
        RETURN;
    END IF;
    -- Left to the client-side transaction, nothing written: an envelope
    -- changed since the client read it (p_env_json was made from that
    -- text), or lease values whose expiry could be out of range.
    IF NOT (o_interval > 0 AND o_interval <= 1e12 AND o_max_missed BETWEEN -1000000000 AND 1000000000)
       OR NOT EXISTS (SELECT 1 FROM {q}.handoffs h WHERE h.hid = p_hid AND md5(h.envelope_json) = p_env_md5) THEN
        RETURN;
    END IF;
    INSERT INTO {q}.checkpoints (hid, seq, state_json, state_hash, at)
        VALUES (p_hid, next_seq, p_state_json, p_state_hash, p_at) ON CONFLICT (hid, seq) DO NOTHING;
    inserted := FOUND;
    IF NOT inserted THEN
        RETURN;
    END IF;
    INSERT INTO {q}.progress (hid, last_checkpoint_at, last_digest, digest_repeat_count, updated_at)
        VALUES (p_hid, now_s, NULL, 0, now_s)
        ON CONFLICT (hid) DO UPDATE SET last_checkpoint_at = excluded.last_checkpoint_at,
            digest_repeat_count = 0, updated_at = excluded.updated_at;
    UPDATE {q}.handoffs SET envelope_json = p_env_json, updated_at = p_env_at WHERE hid = p_hid;
    new_lease := now_s + o_interval * o_max_missed::float8;
    UPDATE {q}.ownership SET lease_expires_at = new_lease, updated_at = now_s WHERE hid = p_hid;
END
$dhp$;
CREATE OR REPLACE FUNCTION {q}.dhp_heartbeat_v1(
    p_store int4, p_item int4, p_hid text, p_holder text, p_fence int8,
    {OWNER_OUTS}, OUT new_lease float8)
LANGUAGE plpgsql VOLATILE AS $dhp$
BEGIN
{prologue}
    -- Values whose expiry could overflow or be invalid are left to the
    -- client-side transaction (new_lease stays NULL), which reports them.
    IF NOT (o_interval > 0 AND o_interval <= 1e12 AND o_max_missed BETWEEN -1000000000 AND 1000000000) THEN
        RETURN;
    END IF;
    new_lease := now_s + o_interval * o_max_missed::float8;
    UPDATE {q}.ownership SET lease_expires_at = new_lease, updated_at = now_s WHERE hid = p_hid;
END
$dhp$;
"#
    )
}

/// `dhp_checkpoint_v2` and its result type, for `schema` (quoted as in
/// [`functions_sql`]). A type has no `CREATE OR REPLACE`: an existing one
/// is kept (its name is versioned like the function's).
pub fn functions_v2_sql(schema: &str) -> String {
    let q = format!("\"{schema}\"");
    format!(
        r#"
DO $do$ BEGIN
    CREATE TYPE {q}.dhp_checkpoint_r_v2 AS (
        o_holder text, o_fence int8, o_lease float8, o_interval float8, o_max_missed int8,
        h_exists boolean, h_status text, now_s float8, next_seq int8, inserted boolean);
EXCEPTION WHEN duplicate_object THEN NULL;
END $do$;
CREATE OR REPLACE FUNCTION {q}.dhp_checkpoint_v2(
    p_store int4, p_item int4, p_hid text, p_holder text, p_fence int8,
    p_state_json text, p_state_hash text, p_at text, p_max int8)
RETURNS {q}.dhp_checkpoint_r_v2
LANGUAGE plpgsql VOLATILE AS $dhp$
DECLARE
    locked text;
    o_holder text; o_fence int8; o_lease float8; o_interval float8; o_max_missed int8;
    h_exists boolean; h_status text; now_s float8; next_seq int8; inserted boolean := false;
BEGIN
    -- An assignment, not PERFORM: evaluated as a simple expression, no
    -- executor start-up. The reads below take fresh snapshots after it.
    locked := pg_advisory_xact_lock(p_store, p_item)::text;
    now_s := extract(epoch FROM clock_timestamp())::float8;
    SELECT o.holder, o.fence, o.lease_expires_at, o.heartbeat_interval_s, o.max_missed
      INTO o_holder, o_fence, o_lease, o_interval, o_max_missed
      FROM {q}.ownership o WHERE o.hid = p_hid;
    SELECT true, h.status,
           COALESCE((SELECT c.seq FROM {q}.checkpoints c WHERE c.hid = p_hid ORDER BY c.seq DESC LIMIT 1), -1) + 1
      INTO h_exists, h_status, next_seq FROM {q}.handoffs h WHERE h.hid = p_hid;
    h_exists := coalesce(h_exists, false);
    IF o_holder IS DISTINCT FROM p_holder OR o_fence IS DISTINCT FROM p_fence OR o_lease < now_s
       OR NOT h_exists OR h_status IS DISTINCT FROM 'running' THEN
        -- as _v1: no seq read when refused
        RETURN ROW(o_holder, o_fence, o_lease, o_interval, o_max_missed, h_exists, h_status, now_s, NULL::int8, false);
    END IF;
    IF next_seq >= p_max THEN
        RETURN ROW(o_holder, o_fence, o_lease, o_interval, o_max_missed, h_exists, h_status, now_s, next_seq, false);
    END IF;
    INSERT INTO {q}.checkpoints (hid, seq, state_json, state_hash, at)
        VALUES (p_hid, next_seq, p_state_json, p_state_hash, p_at) ON CONFLICT (hid, seq) DO NOTHING;
    inserted := FOUND;
    IF inserted THEN
        -- A checkpoint resets the stall clock and the digest counter.
        UPDATE {q}.progress SET last_checkpoint_at = now_s, digest_repeat_count = 0, updated_at = now_s
            WHERE hid = p_hid;
        IF NOT FOUND THEN
            INSERT INTO {q}.progress (hid, last_checkpoint_at, last_digest, digest_repeat_count, updated_at)
                VALUES (p_hid, now_s, NULL, 0, now_s)
                ON CONFLICT (hid) DO UPDATE SET last_checkpoint_at = excluded.last_checkpoint_at,
                    digest_repeat_count = 0, updated_at = excluded.updated_at;
        END IF;
    END IF;
    RETURN ROW(o_holder, o_fence, o_lease, o_interval, o_max_missed, h_exists, h_status, now_s, next_seq, inserted);
END
$dhp$;
"#
    )
}

/// Which one-round-trip functions a store has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Present {
    /// The `_v1` set ([`SIGNATURES`]).
    pub v1: bool,
    /// `dhp_checkpoint_v2`.
    pub v2: bool,
}

fn present(t: &mut Transaction<'_>, schema: &str) -> Result<Present> {
    let sigs: Vec<String> = SIGNATURES.iter().map(|sig| format!("\"{schema}\".{sig}")).collect();
    let r = t.query_one(
        "SELECT bool_and(to_regprocedure(s) IS NOT NULL), to_regprocedure($2) IS NOT NULL FROM unnest($1::text[]) s",
        &[&sigs, &format!("\"{schema}\".{CHECKPOINT_V2}")],
    )?;
    Ok(Present { v1: r.get(0), v2: r.get(1) })
}

/// Inside the open transaction (holding the init lock): make sure the
/// functions exist, creating them if missing. What is missing and could
/// not be created (no privilege) is not used: without `_v2` the `_v1`
/// checkpoint, without `_v1` the client-side transactions.
pub(super) fn ensure(t: &mut Transaction<'_>, schema: &str) -> Result<Present> {
    let found = present(t, schema)?;
    if found.v1 && found.v2 {
        return Ok(found);
    }
    let mut sp = t.savepoint("dhp_functions")?;
    let sql = format!("{}{}", functions_sql(schema), functions_v2_sql(schema));
    match sp.batch_execute(&sql) {
        Ok(()) => {
            sp.commit()?;
            Ok(Present { v1: true, v2: true })
        }
        Err(e) => {
            // Dropping the savepoint rolls it back; the store stays usable.
            tracing::warn!(error = %e, schema, "cannot create the one-round-trip functions; using what is there");
            Ok(found)
        }
    }
}

impl PgStore {
    pub(super) fn checkpoint_call(&self, req: CheckpointReq<'_>) -> Result<Option<CheckpointOnce>> {
        let item = item_key(req.hid);
        let (hid, holder, fence, max) = (req.hid, req.holder.as_str(), req.fence.get(), req.max_checkpoints);
        let (state, hash, at) = (req.state_json, req.state_hash, req.at);
        let (key, item, fence, max) = (Param::I4(self.key), Param::I4(item), Param::I8(fence), Param::I8(max));
        let (r, steps) = match req.bump {
            None => {
                let args = [
                    key,
                    item,
                    Param::T(hid),
                    Param::T(holder),
                    fence,
                    Param::T(state),
                    Param::T(hash),
                    Param::T(at),
                    max,
                ];
                // `_v2` when the store has it (dropped since: `_v1`).
                let r = match self.hot(&self.one_trip_v2, &CHECKPOINT_V2_CALL, &args)? {
                    Some(row) => Some(row),
                    None => self.hot(&self.one_trip, &CHECKPOINT_CALL, &args)?,
                };
                (r, false)
            }
            Some(bump) => {
                // The envelope as stored now; the function writes the new
                // text only if the stored one is still this one.
                let Some(Some(read)) = self.hot(&self.one_trip, &ENVELOPE_READ, &[Param::T(hid)])? else {
                    return Ok(None);
                };
                let (Some(old), Some(md5)) = (read.text(0, "envelope_json")?, read.text(1, "md5")?) else {
                    return Ok(None);
                };
                let Some(new) = bump(&old) else { return Ok(None) };
                let env_at = crate::envelope::now();
                let args = [
                    key,
                    item,
                    Param::T(hid),
                    Param::T(holder),
                    fence,
                    Param::T(state),
                    Param::T(hash),
                    Param::T(at),
                    max,
                    Param::T(&md5),
                    Param::T(&new),
                    Param::F8(env_at),
                ];
                (self.hot(&self.one_trip, &CHECKPOINT_STEPS_CALL, &args)?, true)
            }
        };
        let Some(Some(r)) = r else { return Ok(None) };
        checkpoint_once(&r, hid, steps).map(Some)
    }

    pub(super) fn heartbeat_call(&self, params: &[Param<'_>], hid: &str) -> Result<Option<HeartbeatOnce>> {
        let Some(Some(r)) = self.hot(&self.one_trip, &HEARTBEAT_CALL, params)? else { return Ok(None) };
        Ok(Some(HeartbeatOnce { seen: seen(&r, hid)?, lease_expires_at: r.float8(8, "new_lease")? }))
    }
}

/// A checkpoint function's row: what it read, the seq, whether it wrote;
/// with counted steps (`steps`) the new lease too.
pub(super) fn checkpoint_once(r: &AnyRow, hid: &str, steps: bool) -> Result<CheckpointOnce> {
    Ok(CheckpointOnce {
        seen: seen(r, hid)?,
        seq: r.int8(8, "next_seq")?,
        inserted: r.boolean(9, "inserted")?.unwrap_or(false),
        lease_expires_at: if steps { r.float8(10, "new_lease")? } else { None },
    })
}
