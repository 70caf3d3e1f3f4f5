//! The same views on a PostgreSQL store: a session whose every
//! transaction is `READ ONLY` (the server refuses any write), in the
//! store's schema. The schema has no `updated_at` indexes (its DDL is the
//! backend's, and a read-only view adds none), so a look that finds the
//! server's WAL moved reads the changed stamps with a scan of the
//! `handoffs`, `ownership` and `progress` tables; an idle server costs
//! one `pg_current_wal_lsn()` per poll (docs/dashboard.md).

use super::*;
use crate::store::location::PgLocation;
use postgres::Transaction;

pub(super) fn open(loc: &PgLocation) -> Result<postgres::Client> {
    use std::str::FromStr;
    let bad = |reason: String| Error::StoreLocation { location: loc.to_string(), reason };
    let mut config =
        postgres::Config::from_str(&loc.url).map_err(|e| bad(format!("not a valid PostgreSQL URL: {e}")))?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(crate::store::postgres::DEFAULT_CONNECT_TIMEOUT);
    }
    crate::store::postgres::passfile::fill_password(&mut config, loc.passfile.as_deref());
    if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
        return Err(bad("the URL names no host: give host[:port], or host=/socket/directory".into()));
    }
    let sockets_only = config.get_hostaddrs().is_empty()
        && config.get_hosts().iter().all(|h| matches!(h, postgres::config::Host::Unix(_)));
    if sockets_only {
        config.ssl_mode(postgres::config::SslMode::Disable);
    }
    if config.get_application_name().is_none() {
        config.application_name(&format!("dhp-dashboard-{}", std::process::id()));
    }
    let user = config.get_options().unwrap_or("").to_string();
    // the URL's options first, so that ours (read-only) win
    config.options(&format!(
        "{user} -c statement_timeout={} -c search_path={} -c default_transaction_read_only=on",
        crate::store::postgres::statement_timeout_ms(),
        loc.schema
    ));
    let tls = crate::store::postgres::tls::MakeRustls::new(loc)?;
    let mut c = config.connect(tls).map_err(Error::from)?;
    let found = c.query_opt(
        "SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'schema_version'",
        &[&loc.schema],
    )?;
    if found.is_none() {
        return Err(Error::NotAStore {
            location: loc.to_string(),
            reason: "no DHP store in this schema (no schema_version table)".into(),
        });
    }
    Ok(c)
}

/// Run `f` in a read-only transaction.
pub(super) fn read<T>(c: &Mutex<postgres::Client>, f: impl FnOnce(&mut Transaction<'_>) -> Result<T>) -> Result<T> {
    let mut c = lock(c);
    let mut t = c.build_transaction().read_only(true).start()?;
    let out = f(&mut t)?;
    t.commit()?;
    Ok(out)
}

fn json_member(path: &str) -> String {
    format!("((h.envelope_json::json) #> '{{{path}}}')::text")
}

fn cols() -> String {
    format!(
        "h.hid, h.status, {}, {}, o.holder, o.fence, o.lease_expires_at, h.updated_at, \
         (SELECT COALESCE(MAX(c.seq) + 1, 0) FROM checkpoints c WHERE c.hid = h.hid), {}, {}, {}",
        json_member("task,kind"),
        json_member("execution,attempt"),
        json_member("execution,error"),
        json_member("execution,orphan_reason"),
        json_member("execution,runner_id"),
    )
}

fn js(v: Option<String>) -> Value {
    v.and_then(|t| serde_json::from_str(&t).ok()).unwrap_or(Value::Null)
}

fn row(r: &postgres::Row) -> Result<Row> {
    Ok(Row {
        hid: r.try_get(0)?,
        status: r.try_get(1)?,
        kind: js(r.try_get(2)?),
        attempt: js(r.try_get(3)?),
        holder: r.try_get(4)?,
        fence: r.try_get(5)?,
        lease_expires_at: r.try_get(6)?,
        updated_at: r.try_get(7)?,
        checkpoints: r.try_get(8)?,
        error: js(r.try_get(9)?),
        orphan_reason: js(r.try_get(10)?),
        runner_id: js(r.try_get(11)?),
    })
}

pub(super) fn page(
    t: &mut Transaction<'_>,
    filter: &Filter,
    after: Option<&str>,
    limit: usize,
) -> Result<(Vec<Row>, Option<String>)> {
    let after = after.unwrap_or("").to_string();
    let lo = filter.hid_prefix.clone().unwrap_or_default();
    let hi = filter.hid_prefix.as_deref().and_then(prefix_end).unwrap_or_else(|| "g".into());
    let mut args: Vec<Box<dyn postgres::types::ToSql + Sync>> = vec![Box::new(after), Box::new(lo), Box::new(hi)];
    let mut conds = vec!["h.hid > $1".to_string(), "h.hid >= $2".to_string(), "h.hid < $3".to_string()];
    if let Some(s) = &filter.status {
        args.push(Box::new(s.clone()));
        conds.push(format!("h.status = ${}", args.len()));
    }
    if let Some(holder) = &filter.holder {
        args.push(Box::new(holder.clone()));
        conds.push(format!("o.holder = ${}", args.len()));
    }
    args.push(Box::new(limit as i64 + 1));
    let sql = format!(
        "SELECT {} FROM handoffs h LEFT JOIN ownership o ON o.hid = h.hid WHERE {} ORDER BY h.hid LIMIT ${}",
        cols(),
        conds.join(" AND "),
        args.len()
    );
    let refs: Vec<&(dyn postgres::types::ToSql + Sync)> = args.iter().map(|a| a.as_ref()).collect();
    let mut rows = t.query(&sql, &refs)?.iter().map(row).collect::<Result<Vec<_>>>()?;
    let next = if rows.len() > limit {
        rows.truncate(limit);
        rows.last().map(|r| r.hid.clone())
    } else {
        None
    };
    Ok((rows, next))
}

pub(super) fn rows_of(t: &mut Transaction<'_>, hids: &[String]) -> Result<Vec<Row>> {
    let sql = format!("SELECT {} FROM handoffs h LEFT JOIN ownership o ON o.hid = h.hid WHERE h.hid = ANY($1)", cols());
    let mut rows = t.query(&sql, &[&hids])?.iter().map(row).collect::<Result<Vec<_>>>()?;
    rows.sort_by(|a, b| a.hid.cmp(&b.hid));
    Ok(rows)
}

pub(super) fn each_status(t: &mut Transaction<'_>, each: &mut dyn FnMut(String, Option<String>)) -> Result<()> {
    for r in t.query("SELECT hid, status FROM handoffs", &[])? {
        each(r.try_get(0)?, r.try_get(1)?);
    }
    Ok(())
}

pub(super) fn leadership(t: &mut Transaction<'_>) -> Result<Option<(String, f64, f64)>> {
    let r = t.query_opt("SELECT holder, expires_at, updated_at FROM leadership WHERE id = 1", &[])?;
    Ok(match r {
        Some(r) => Some((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)),
        None => None,
    })
}

fn lsn(t: &mut Transaction<'_>) -> Option<String> {
    // a standby has no current WAL position: always look
    t.query_one("SELECT pg_current_wal_lsn()::text", &[]).ok().and_then(|r| r.try_get(0).ok())
}

fn max(t: &mut Transaction<'_>, sql: &str) -> Result<f64> {
    Ok(t.query_one(sql, &[])?.try_get::<_, Option<f64>>(0)?.unwrap_or(0.0))
}

pub(super) fn watermark(t: &mut Transaction<'_>) -> Result<Watermark> {
    let mut wm = Watermark {
        lsn: None,
        handoffs: max(t, "SELECT MAX(updated_at) FROM handoffs")?,
        ownership: max(t, "SELECT MAX(updated_at) FROM ownership")?,
        pg_marks: [
            max(t, "SELECT MAX(updated_at) FROM progress")?,
            max(t, "SELECT MAX(at) FROM effects")?,
            max(t, "SELECT MAX(GREATEST(created_at, COALESCE(decided_at, 0))) FROM approvals")?,
        ],
        ..Default::default()
    };
    for (tab, sql, newest) in [
        (0u8, "SELECT hid, updated_at FROM handoffs WHERE updated_at >= $1", wm.handoffs),
        (1u8, "SELECT hid, updated_at FROM ownership WHERE updated_at >= $1", wm.ownership),
    ] {
        for r in t.query(sql, &[&(newest - SLACK_S)])? {
            wm.recent.insert((tab, r.try_get(0)?), r.try_get(1)?);
        }
    }
    wm.lsn = lsn(t);
    Ok(wm)
}

pub(super) fn changes(t: &mut Transaction<'_>, wm: &mut Watermark) -> Result<Delta> {
    let now = lsn(t);
    if now.is_some() && now == wm.lsn {
        return Ok(Delta::default());
    }
    let mut hids: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut approvals_changed = false;
    // each table's stamps within the slack window, each stamp once
    for tab in 0u8..5 {
        let (sql, mark) = match tab {
            0 => ("SELECT hid, updated_at FROM handoffs WHERE updated_at >= $1", wm.handoffs),
            1 => ("SELECT hid, updated_at FROM ownership WHERE updated_at >= $1", wm.ownership),
            2 => ("SELECT hid, updated_at FROM progress WHERE updated_at >= $1", wm.pg_marks[0]),
            3 => ("SELECT hid, at FROM effects WHERE at >= $1", wm.pg_marks[1]),
            _ => (
                "SELECT hid, GREATEST(created_at, COALESCE(decided_at, 0)) FROM approvals \
                 WHERE created_at >= $1 OR decided_at >= $1",
                wm.pg_marks[2],
            ),
        };
        let mut top = mark;
        for r in t.query(sql, &[&(mark - SLACK_S)])? {
            let (h, at): (String, f64) = (r.try_get(0)?, r.try_get(1)?);
            top = top.max(at);
            let key = (tab, h);
            if wm.recent.get(&key) != Some(&at) {
                if tab == 4 {
                    approvals_changed = true;
                }
                if seen.insert(key.1.clone()) {
                    hids.push(key.1.clone());
                }
                wm.recent.insert(key, at);
            }
        }
        match tab {
            0 => wm.handoffs = top,
            1 => wm.ownership = top,
            n => wm.pg_marks[usize::from(n) - 2] = top,
        }
    }
    let cut = [wm.handoffs, wm.ownership, wm.pg_marks[0], wm.pg_marks[1], wm.pg_marks[2]];
    wm.recent.retain(|(tab, _), at| *at >= cut[usize::from(*tab)] - SLACK_S);
    wm.lsn = now;
    let truncated = hids.len() > MAX_DELTA_ROWS;
    hids.truncate(MAX_DELTA_ROWS);
    Ok(Delta { rows: rows_of(t, &hids)?, truncated, approvals_changed })
}

fn list(t: &mut Transaction<'_>, sql: &str, hid: &str, names: &[&str]) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for r in t.query(sql, &[&hid, &(DETAIL_ROWS as i64)])? {
        let mut m = Map::new();
        for (i, n) in names.iter().enumerate() {
            m.insert((*n).to_string(), js(r.try_get(i)?));
        }
        out.push(Value::Object(m));
    }
    Ok(out)
}

pub(super) fn detail(t: &mut Transaction<'_>, hid: &str) -> Result<Option<(Row, Value)>> {
    let Some(row) = rows_of(t, &[hid.to_string()])?.pop() else { return Ok(None) };
    let text: String = t.query_one("SELECT envelope_json FROM handoffs WHERE hid = $1", &[&hid])?.try_get(0)?;
    let envelope = crate::json::parse(&text).unwrap_or(Value::String(text));
    let one = |t: &mut Transaction<'_>, sql: &str, names: &[&str]| -> Result<Value> {
        Ok(list(t, sql, hid, names)?.pop().unwrap_or(Value::Null))
    };
    let ownership = one(
        t,
        "SELECT to_json(holder)::text, fence::text, lease_expires_at::text, heartbeat_interval_s::text, \
         max_missed::text, updated_at::text FROM ownership WHERE hid = $1 LIMIT $2",
        &["holder", "fence", "lease_expires_at", "heartbeat_interval_s", "max_missed", "updated_at"],
    )?;
    let progress = one(
        t,
        "SELECT last_checkpoint_at::text, to_json(last_digest)::text, digest_repeat_count::text, updated_at::text \
         FROM progress WHERE hid = $1 LIMIT $2",
        &["last_checkpoint_at", "last_digest", "digest_repeat_count", "updated_at"],
    )?;
    let mut checkpoints = list(
        t,
        "SELECT seq::text, to_json(at)::text, to_json(state_hash)::text, length(state_json)::text, \
         to_json(substr(state_json, 1, 240))::text FROM checkpoints WHERE hid = $1 ORDER BY seq DESC LIMIT $2",
        hid,
        &["seq", "at", "state_hash", "state_bytes", "state_head"],
    )?;
    checkpoints.reverse();
    let effects = list(
        t,
        "SELECT to_json(step_id)::text, at::text, to_json(substr(result_json, 1, 240))::text FROM effects \
         WHERE hid = $1 ORDER BY at LIMIT $2",
        hid,
        &["step_id", "at", "result_head"],
    )?;
    let approvals = list(
        t,
        "SELECT to_json(approval_id)::text, to_json(action_class)::text, to_json(status)::text, created_at::text, \
         expires_at::text, decided_at::text, to_json(substr(details_json, 1, 240))::text FROM approvals \
         WHERE hid = $1 ORDER BY created_at LIMIT $2",
        hid,
        &["approval_id", "action_class", "status", "created_at", "expires_at", "decided_at", "details_head"],
    )?;
    let audit = list(
        t,
        "SELECT to_json(domain)::text, to_json(resource)::text, granted::text, at::text FROM capability_audit \
         WHERE hid = $1 ORDER BY at LIMIT $2",
        hid,
        &["domain", "resource", "granted", "at"],
    )?;
    let out = json!({
        "row": row, "envelope": envelope, "ownership": ownership, "progress": progress,
        "checkpoints": checkpoints, "effects": effects, "approvals": approvals, "capability_audit": audit,
    });
    Ok(Some((row, out)))
}

/// The `liveness` listings and the pid of the session holding each
/// one's advisory lock (`None`: published and not held, dead).
pub(super) fn liveness(t: &mut Transaction<'_>) -> Result<Vec<(String, Option<i32>)>> {
    let rows = t.query(
        "SELECT lv.holder, (SELECT l.pid FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted \
         AND l.objsubid = 1 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
         AND l.classid::bigint = ((lv.lock_key >> 32) & 4294967295) \
         AND l.objid::bigint = (lv.lock_key & 4294967295) LIMIT 1) FROM liveness lv ORDER BY lv.holder",
        &[],
    )?;
    rows.iter().map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).collect()
}
