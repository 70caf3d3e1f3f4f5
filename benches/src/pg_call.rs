//! Two limits instead of one (issue 49, item 1). pgbench drives DHP's own
//! checkpoint call, `SELECT * FROM dhp_checkpoint_v2(…)`, on the server of
//! the run, one handoff per client, with the arguments a worker sends: so
//! what DHP's workers lose against it is the client's (the *client*
//! limit). And the server's CPU per DHP checkpoint is set against the
//! one-round-trip script's per transaction (the *server* limit). The same
//! call to `_v1` runs beside it: the server CPU of both bodies, same run.

use crate::pg_limit::{Target, Workload};
use dhp_core::{envelope, json, Config, Error, Result, Runner};
use serde_json::{json as j, Value};
use std::path::PathBuf;

/// DHP's rate against pgbench calling the same function: at least this.
pub const CLIENT_TARGET: f64 = 0.9;
/// Server CPU per DHP checkpoint against the one-round-trip script's per
/// transaction: at most this.
pub const SERVER_TARGET: f64 = 1.5;
/// Worker CPU per checkpoint on PostgreSQL, µs: at most this.
pub const WORKER_TARGET_US: f64 = 30.0;

/// The script of [`Workload::Call`].
pub fn script_path(t: &Target, v2: bool) -> PathBuf {
    t.scratch.join(if v2 { "call-v2.sql" } else { "call-v1.sql" })
}

/// The state every call checkpoints (what `dhp-bench pg`'s workers send).
const STATE: &str = r#"{"n":1}"#;

/// Dispatch and claim `clients` handoffs in the store at `store_url` (a
/// lease of hours: the runs must not outlive it), and write a script per
/// function version: client k calls it on handoff k with the worker's
/// arguments (store and item lock keys, hid, holder, fence, state, its
/// hash, the time, the checkpoint cap). pgbench has no per-client text
/// variables, so each client takes its own branch of an `\if` chain,
/// numbered `client_id + base` (`-D base=…`: 0, or the client's number
/// when each pgbench process runs one client).
pub fn prepare(t: &Target, store_url: &str, clients: usize) -> Result<Vec<String>> {
    let cfg = Config { lease_interval_s: 3600.0, ..Config::default() };
    let max = cfg.max_checkpoints_per_handoff;
    let at = cfg.clock.now_iso();
    let r = Runner::open(store_url, "pgbench", cfg)?;
    let schema = match dhp_core::store::StoreLocation::parse(store_url)? {
        dhp_core::store::StoreLocation::Postgres(p) => p.schema,
        other => return Err(Error::validation(format!("not a PostgreSQL store: {other}"))),
    };
    let hash = json::sha256_hex(&json::canonical(&json::parse(STATE)?)?);
    let mut branches = Vec::new();
    for k in 0..clients {
        let input = j!({"client": k, "at": envelope::now()});
        let hid = r.dispatch(&envelope::build("pgbench", input, j!({}), Default::default())?)?;
        let lease = r.claim(&hid)?;
        let (key, item) = dhp_core::store::postgres::advisory_keys(&schema, &hid);
        branches.push((k, key, item, hid.to_string(), lease.fence()));
    }
    for v2 in [true, false] {
        let f = if v2 { "dhp_checkpoint_v2" } else { "dhp_checkpoint_v1" };
        // `base` (pgbench -D) numbers the clients of a run of one client per process
        let mut text = String::from("\\set k :client_id + :base\n");
        for (k, key, item, hid, fence) in &branches {
            let kw = if *k == 0 { "\\if" } else { "\\elif" };
            text += &format!(
                "{kw} :k = {k}\nSELECT * FROM \"{schema}\".{f}({key}, {item}, '{hid}', 'pgbench', {fence}, \
                 '{STATE}', '{hash}', '{at}', {max});\n"
            );
        }
        text += "\\endif\n";
        let path = script_path(t, v2);
        std::fs::write(&path, text).map_err(|e| Error::Io { path: path.clone(), source: e })?;
    }
    Ok(branches.into_iter().map(|b| b.3).collect())
}

/// The checkpoints the handoffs of [`prepare`] hold: every call pgbench
/// counted must have written one (a refused call costs the server less,
/// and would flatter the limit).
pub fn written(store_url: &str, hids: &[String]) -> Result<u64> {
    let r = Runner::open(store_url, "pgbench-check", Config::default())?;
    let mut n = 0;
    for hid in hids {
        n += r.status(hid)?["checkpoints"].as_u64().unwrap_or(0);
    }
    Ok(n)
}

/// The workloads of this module, in the order they run.
pub const WORKLOADS: [Workload; 4] =
    [Workload::Call(true), Workload::CallEach, Workload::CallProcs, Workload::Call(false)];

pub(crate) fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

pub(crate) fn show(x: Option<f64>, digits: usize, unit: &str) -> String {
    x.map(|x| format!("{x:.digits$}{unit}")).unwrap_or_else(|| "—".into())
}

/// `MET` when `value ≤ limit`.
fn at_most(value: Option<f64>, limit: f64) -> &'static str {
    match value {
        Some(v) if v <= limit => "MET",
        Some(_) => "**MISSED**",
        None => "UNCHECKED",
    }
}

/// The Markdown of both limits; `v` is `dhp-bench pg`'s JSON. Empty when
/// no run has the call rows.
pub fn markdown(v: &Value) -> String {
    let rows: Vec<&Value> =
        v["aggregate"].as_array().into_iter().flatten().filter(|a| a["pgbench"]["call_v2"].is_object()).collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\n### Two limits: the client's and the server's (issue 49)\n\n\
         *Client*: pgbench (`-M prepared`, same server, right after DHP's run with as many workers) calling DHP's \
         own checkpoint function, `SELECT * FROM dhp_checkpoint_v2(…)`, one claimed handoff per client, with the \
         arguments a worker sends (state `{STATE}`): what DHP's workers lose against it is the client's. \
         *Server*: the server's CPU per DHP checkpoint (DHP's run) against per one-round-trip transaction. \
         `_v1` called the same way, for the server CPU of both bodies in the same run. pgbench shares two \
         threads among its clients; *a thread each* is the same call with `-j` = clients, each client waiting for \
         and woken by its own reply, as each of DHP's workers (a process per handoff) is: shown beside the \
         verdict, which stays against the two-thread run.\n\n\
         | clients = workers | DHP checkpoints/s | pgbench calling `_v2`, calls/s | DHP / call | target | verdict \
         | DHP worker µs/checkpoint | target | verdict | pgbench µs/call | a thread each: calls/s | µs/call \
         | DHP / it | load after |\n\
         |---:|---:|---:|---:|---:|---|---:|---:|---|---:|---:|---:|---:|---|\n"
    );
    for a in &rows {
        let dhp = a["postgres"].as_f64();
        let call = a["pgbench"]["call_v2"]["tps"].as_f64();
        let r = ratio(dhp, call);
        let worker = a["postgres_cpu"]["client_us"].as_f64();
        let each = &a["pgbench"]["call_v2_each"];
        out += &format!(
            "| {} | {} | {} | {} | ≥ {CLIENT_TARGET}× | {} | {} | ≤ {WORKER_TARGET_US} | {} | {} | {} | {} | {} | {} |\n",
            a["processes"],
            show(dhp, 0, ""),
            show(call, 0, ""),
            show(r, 2, "×"),
            r.map(|r| crate::pg_limit::verdict(r, CLIENT_TARGET)).unwrap_or("UNCHECKED"),
            show(worker, 0, ""),
            at_most(worker, WORKER_TARGET_US),
            show(a["pgbench"]["call_v2"]["client_us"].as_f64(), 0, ""),
            show(each["tps"].as_f64(), 0, ""),
            show(each["client_us"].as_f64(), 0, ""),
            show(ratio(dhp, each["tps"].as_f64()), 2, "×"),
            a["load_after"].as_str().unwrap_or("—"),
        );
    }
    out += &procs_table(&rows);
    out += "\nServer CPU, µs per checkpoint, call or transaction (the postmaster's reaped backends, start-up \
            included):\n\n\
            | clients | DHP's run | one-round-trip | DHP / one-round-trip | target | verdict | pgbench calling `_v2` \
            | pgbench calling `_v1` | `_v2` / `_v1` |\n|---:|---:|---:|---:|---:|---|---:|---:|---:|\n";
    for a in &rows {
        let ds = a["postgres_cpu"]["server_us"].as_f64();
        let one = a["pgbench"]["one_trip"]["server_us"].as_f64();
        let (c2, c1) = (a["pgbench"]["call_v2"]["server_us"].as_f64(), a["pgbench"]["call_v1"]["server_us"].as_f64());
        let r = ratio(ds, one);
        out += &format!(
            "| {} | {} | {} | {} | ≤ {SERVER_TARGET}× | {} | {} | {} | {} |\n",
            a["processes"],
            show(ds, 0, ""),
            show(one, 0, ""),
            show(r, 2, "×"),
            at_most(r, SERVER_TARGET),
            show(c2, 0, ""),
            show(c1, 0, ""),
            show(ratio(c2, c1), 2, "×"),
        );
    }
    out
}

/// DHP's shape on both sides: pgbench calling `_v2` from one process per
/// client, as DHP runs a worker process per handoff. Empty when no run has it.
fn procs_table(rows: &[&Value]) -> String {
    let rows: Vec<&&Value> = rows.iter().filter(|a| a["pgbench"]["call_v2_procs"].is_object()).collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\nThe same call from *a process each*: one pgbench process per client (`-c 1 -j 1`, started together), \
         the shape of DHP's workers, a process per handoff, so each wake-up switches address spaces on both \
         sides (printed, not judged):\n\n\
         | clients = workers | DHP checkpoints/s | a process each: calls/s | DHP / it | DHP worker µs/checkpoint \
         | pgbench µs/call | DHP server µs/checkpoint | server µs/call |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for a in rows {
        let p = &a["pgbench"]["call_v2_procs"];
        let dhp = a["postgres"].as_f64();
        out += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            a["processes"],
            show(dhp, 0, ""),
            show(p["tps"].as_f64(), 0, ""),
            show(ratio(dhp, p["tps"].as_f64()), 2, "×"),
            show(a["postgres_cpu"]["client_us"].as_f64(), 0, ""),
            show(p["client_us"].as_f64(), 0, ""),
            show(a["postgres_cpu"]["server_us"].as_f64(), 0, ""),
            show(p["server_us"].as_f64(), 0, ""),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_limits_are_judged() {
        let run = |tps: f64, server: f64| j!({"tps": tps, "client_us": 20.0, "server_us": server});
        let v = j!({"aggregate": [
            {"processes": 1, "postgres": 4500.0, "load_after": "1.0 1.0 1.0",
             "postgres_cpu": {"client_us": 25.0, "server_us": 150.0},
             "pgbench": {"one_trip": run(5000.0, 100.0), "call_v2": run(5000.0, 140.0), "call_v1": run(4000.0, 200.0),
                         "call_v2_each": run(4400.0, 150.0), "call_v2_procs": run(4000.0, 160.0)}},
            {"processes": 8, "postgres": 7000.0, "load_after": "2.0 2.0 2.0",
             "postgres_cpu": {"client_us": 60.0, "server_us": 200.0},
             "pgbench": {"one_trip": run(14000.0, 100.0), "call_v2": run(8000.0, 150.0), "call_v1": run(7000.0, 210.0)}}]});
        let md = markdown(&v);
        assert!(
            md.contains(
                "| 1 | 4500 | 5000 | 0.90× | ≥ 0.9× | MET | 25 | ≤ 30 | MET | 20 | 4400 | 20 | 1.02× | 1.0 1.0 1.0 |"
            ),
            "{md}"
        );
        // a run without the thread-each row shows it missing, not zero
        assert!(
            md.contains("| 8 | 7000 | 8000 | 0.88× | ≥ 0.9× | **MISSED** | 60 | ≤ 30 | **MISSED** | 20 | — | — | — |"),
            "{md}"
        );
        assert!(md.contains("| 8 | 7000 | 8000 | 0.88× | ≥ 0.9× | **MISSED** | 60 | ≤ 30 | **MISSED** |"), "{md}");
        assert!(md.contains("| 1 | 150 | 100 | 1.50× | ≤ 1.5× | MET | 140 | 200 | 0.70× |"), "{md}");
        // a process each: shown for the run that has it, and only for it
        assert!(md.contains("| 1 | 4500 | 4000 | 1.12× | 25 | 20 | 150 | 160 |"), "{md}");
        assert!(!md.contains("| 8 | 7000 | — |"), "{md}");
        assert!(md.contains("| 8 | 200 | 100 | 2.00× | ≤ 1.5× | **MISSED** | 150 | 210 | 0.71× |"), "{md}");
        assert!(markdown(&j!({"aggregate": [{"processes": 1, "pgbench": {}}]})).is_empty());
        assert_eq!(at_most(None, 1.0), "UNCHECKED");
    }
}
