//! The physical limit the PostgreSQL rows are judged against (issue 37):
//! `pgbench`, the server package's own load generator, against the very
//! server `dhp-bench pg` uses, in the same run, with 1 / 8 / 32 clients.
//! Two workloads: pgbench's built-in simple update (`-N`: three statements
//! and a commit, five round trips) and a one-round-trip script shaped like a
//! checkpoint (one durable transaction that updates a row and inserts one,
//! as one statement). Both run with `-M prepared` in a database of their
//! own (`dhp_pgbench`), so DHP's schemas are untouched.

use dhp_core::{Error, Result};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The database pgbench's tables live in, on the bench's server.
pub const DATABASE: &str = "dhp_pgbench";

/// The checkpoint-shaped script: one statement, hence one round trip and
/// one implicit transaction; it updates the client's progress row and
/// inserts the next checkpoint row under a (client, seq) primary key.
pub const ONE_TRIP_SQL: &str = "WITH u AS (UPDATE dhp_limit_progress SET seq = seq + 1, \
     at = extract(epoch FROM clock_timestamp()) WHERE client = :client_id RETURNING client, seq) \
     INSERT INTO dhp_limit_cp (client, seq, state) SELECT client, seq, '{\"n\": 1}' FROM u;\n";

const TABLES_SQL: &str = "DROP TABLE IF EXISTS dhp_limit_progress, dhp_limit_cp; \
     CREATE TABLE dhp_limit_progress (client int PRIMARY KEY, seq bigint NOT NULL, at double precision NOT NULL); \
     CREATE TABLE dhp_limit_cp (client int NOT NULL, seq bigint NOT NULL, state text NOT NULL, \
     PRIMARY KEY (client, seq)); \
     INSERT INTO dhp_limit_progress SELECT g, 0, 0 FROM generate_series(0, 1023) g;";

/// A pgbench workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// pgbench's built-in simple update (`-N`).
    SimpleUpdate,
    /// [`ONE_TRIP_SQL`] (`-f`).
    OneTrip,
    /// DHP's own checkpoint call, `dhp_checkpoint_v2` (`true`) or `_v1`,
    /// one handoff per client, in DHP's store ([`crate::pg_call`]).
    Call(bool),
    /// `Call(true)` with one pgbench thread per client (`-j` = clients):
    /// each client waits for its own reply and is woken for it, as each
    /// of DHP's workers (a process per handoff) is; `Call` shares two
    /// threads among all clients.
    CallEach,
    /// `Call(true)` from one pgbench process per client (`-c 1 -j 1`
    /// each, started together): DHP's own shape, a worker process per
    /// handoff, each with its own address space to switch to.
    CallProcs,
}

impl Workload {
    /// The JSON key of its rows.
    pub fn key(self) -> &'static str {
        match self {
            Workload::SimpleUpdate => "simple_update",
            Workload::OneTrip => "one_trip",
            Workload::Call(true) => "call_v2",
            Workload::Call(false) => "call_v1",
            Workload::CallEach => "call_v2_each",
            Workload::CallProcs => "call_v2_procs",
        }
    }
}

/// The `pgbench` binary: `DHP_PGBENCH`, else the newest
/// `/usr/lib/postgresql/*/bin/pgbench` (where `scripts/pg.sh` finds
/// `initdb`), else `pgbench` on the `PATH`.
pub fn pgbench_path() -> PathBuf {
    if let Some(p) = std::env::var_os("DHP_PGBENCH") {
        return PathBuf::from(p);
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|d| {
            let v: u32 = d.file_name().to_str()?.parse().ok()?;
            let p = d.path().join("bin/pgbench");
            p.is_file().then_some((v, p))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, p)| p).unwrap_or_else(|| PathBuf::from("pgbench"))
}

/// Where and how pgbench connects: libpq environment variables for the
/// server of `url` and [`DATABASE`].
#[derive(Debug, Clone)]
pub struct Target {
    env: Vec<(&'static str, String)>,
    bin: PathBuf,
    script: PathBuf,
    /// Where [`crate::pg_call`] writes its scripts.
    pub(crate) scratch: PathBuf,
    /// The database of the URL (DHP's stores), for [`Workload::Call`].
    pub(crate) store_db: Option<String>,
}

fn pg_err(what: &str) -> impl Fn(postgres::Error) -> Error + '_ {
    move |e| Error::validation_from(format!("pgbench set-up, {what}: {e}"), e)
}

/// Make [`DATABASE`] on the server of `url` if missing, fill it with
/// `pgbench -i` (scale 1) and the checkpoint-shaped tables, and write the
/// script into `scratch`.
pub fn prepare(url: &str, scratch: &Path) -> Result<Target> {
    let loc = match dhp_core::store::StoreLocation::parse(url)? {
        dhp_core::store::StoreLocation::Postgres(p) => p,
        other => return Err(Error::validation(format!("not a PostgreSQL URL: {other}"))),
    };
    let cfg: postgres::Config = loc.url.parse().map_err(pg_err("parsing the URL"))?;
    let mut env: Vec<(&'static str, String)> = vec![("PGDATABASE", DATABASE.to_string())];
    // every host of a multi-host URL, as libpq takes them, and only the primary
    let hosts: Vec<String> = cfg
        .get_hosts()
        .iter()
        .filter_map(|h| match h {
            postgres::config::Host::Tcp(h) => Some(h.clone()),
            _ => None,
        })
        .collect();
    if !hosts.is_empty() {
        env.push(("PGHOST", hosts.join(",")));
    }
    let ports: Vec<String> = cfg.get_ports().iter().map(|p| p.to_string()).collect();
    if !ports.is_empty() {
        env.push(("PGPORT", ports.join(",")));
    }
    if hosts.len() > 1 {
        env.push(("PGTARGETSESSIONATTRS", "read-write".to_string()));
    }
    if let Some(u) = cfg.get_user() {
        env.push(("PGUSER", u.to_string()));
    }
    if let Some(pw) = cfg.get_password() {
        env.push(("PGPASSWORD", String::from_utf8_lossy(pw).into_owned()));
    }
    let mut c = cfg.connect(postgres::NoTls).map_err(pg_err("connecting"))?;
    let exists = c
        .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&DATABASE])
        .map_err(pg_err("looking for the database"))?
        .is_some();
    if !exists {
        c.batch_execute(&format!("CREATE DATABASE {DATABASE}")).map_err(pg_err("creating the database"))?;
    }
    let mut own = cfg.clone();
    own.dbname(DATABASE);
    let mut c = own.connect(postgres::NoTls).map_err(pg_err("connecting to its database"))?;
    c.batch_execute(TABLES_SQL).map_err(pg_err("creating the checkpoint-shaped tables"))?;
    let bin = pgbench_path();
    std::fs::create_dir_all(scratch).map_err(|e| Error::Io { path: scratch.to_path_buf(), source: e })?;
    let store_db = cfg.get_dbname().map(str::to_string);
    let t = Target { env, bin, script: scratch.join("one-trip.sql"), scratch: scratch.to_path_buf(), store_db };
    std::fs::write(&t.script, ONE_TRIP_SQL).map_err(|e| Error::Io { path: t.script.clone(), source: e })?;
    let out = t.command().args(["-i", "-q", "-s", "1"]).output().map_err(|e| t.io(e))?;
    if !out.status.success() {
        return Err(Error::validation(format!("pgbench -i failed: {}", String::from_utf8_lossy(&out.stderr).trim())));
    }
    Ok(t)
}

impl Target {
    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.envs(self.env.iter().map(|(k, v)| (*k, v.as_str())));
        cmd
    }

    fn io(&self, e: std::io::Error) -> Error {
        Error::Io { path: self.bin.clone(), source: e }
    }

    /// The binary run.
    pub fn bin(&self) -> &Path {
        &self.bin
    }
}

/// One pgbench run: transactions per second, CPU per transaction of
/// pgbench itself and of the server, and pgbench's average latency.
#[derive(Debug, Clone, Copy)]
pub struct PgbenchRun {
    /// Transactions per second, without the initial connection time.
    pub tps: f64,
    /// Transactions pgbench counted.
    pub transactions: u64,
    /// pgbench's average latency, ms.
    pub latency_ms: f64,
    /// CPU of pgbench per transaction, µs (start-up included).
    pub client_us: f64,
    /// CPU of the server per transaction, µs, when its postmaster is local.
    pub server_us: Option<f64>,
}

/// The number after `key` on the line of pgbench's summary that starts with it.
pub fn summary_number(text: &str, key: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.trim_start().starts_with(key))?;
    let rest = line.trim_start().strip_prefix(key)?;
    rest.split_whitespace().find_map(|w| w.trim_end_matches(|c: char| !c.is_ascii_digit()).parse().ok())
}

/// The pgbench command of `workload` with `clients` clients on `threads`
/// threads, its call scripts' `base` client number added to `client_id`.
fn command(t: &Target, workload: Workload, clients: usize, threads: usize, base: usize, seconds: f64) -> Command {
    let mut cmd = t.command();
    cmd.args(["-n", "-M", "prepared", "-c", &clients.to_string(), "-j", &threads.to_string()]);
    cmd.args(["-T", &format!("{}", seconds.ceil().max(1.0) as u64)]);
    match workload {
        Workload::SimpleUpdate => cmd.arg("-N"),
        Workload::OneTrip => cmd.arg("-f").arg(&t.script),
        Workload::Call(_) | Workload::CallEach | Workload::CallProcs => {
            if let Some(db) = &t.store_db {
                cmd.env("PGDATABASE", db);
            }
            cmd.arg("-D").arg(format!("base={base}"));
            cmd.arg("-f").arg(crate::pg_call::script_path(t, workload != Workload::Call(false)))
        }
    };
    cmd
}

/// Run `workload` with `clients` clients for `seconds`, measuring the
/// CPU of the server whose postmaster is `postmaster`.
pub fn run_once(
    t: &Target,
    workload: Workload,
    clients: usize,
    seconds: f64,
    postmaster: Option<u32>,
) -> Result<PgbenchRun> {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let cmds: Vec<Command> = match workload {
        Workload::CallProcs => (0..clients).map(|k| command(t, workload, 1, 1, k, seconds)).collect(),
        Workload::CallEach => vec![command(t, workload, clients, clients, 0, seconds)],
        _ => vec![command(t, workload, clients, clients.min(cores), 0, seconds)],
    };
    let me = std::process::id();
    let client0 = crate::scale::children_cpu_s(me).unwrap_or(0.0);
    let server0 = postmaster.and_then(crate::scale::cpu_with_children_s);
    let children = cmds
        .into_iter()
        .map(|mut c| c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(|e| t.io(e)))
        .collect::<Result<Vec<_>>>()?;
    let outs = children.into_iter().map(|c| c.wait_with_output().map_err(|e| t.io(e))).collect::<Result<Vec<_>>>()?;
    // Backends exit with their clients; the postmaster reaps them.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let client1 = crate::scale::children_cpu_s(me).unwrap_or(0.0);
    let server1 = postmaster.and_then(crate::scale::cpu_with_children_s);
    let (mut tps, mut transactions, mut latency) = (0.0, 0u64, 0.0);
    for out in &outs {
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Err(Error::validation(format!(
                "pgbench {} with {clients} clients failed: {} {}",
                workload.key(),
                text.trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        tps += summary_number(&text, "tps =")
            .ok_or_else(|| Error::validation(format!("no tps in pgbench's output: {text}")))?;
        transactions += summary_number(&text, "number of transactions actually processed:").unwrap_or(0.0) as u64;
        latency += summary_number(&text, "latency average =").unwrap_or(f64::NAN) / outs.len() as f64;
    }
    let per = |cpu: f64| cpu * 1e6 / (transactions.max(1) as f64);
    Ok(PgbenchRun {
        tps,
        transactions,
        latency_ms: latency,
        client_us: per(client1 - client0),
        server_us: match (server0, server1) {
            (Some(a), Some(b)) => Some(per(b - a)),
            _ => None,
        },
    })
}

/// The run as JSON.
pub fn run_json(r: &PgbenchRun) -> Value {
    json!({"tps": r.tps, "transactions": r.transactions, "latency_ms": r.latency_ms,
           "client_us": r.client_us, "server_us": r.server_us})
}

/// `MET` or `MISSED`: `value ≥ target`.
pub fn verdict(value: f64, target: f64) -> &'static str {
    if value >= target {
        "MET"
    } else {
        "**MISSED**"
    }
}

/// The target for DHP's checkpoints/s against the one-round-trip script.
pub const TARGET: f64 = 0.8;

fn us(x: &Value) -> String {
    x.as_f64().map(|n| format!("{n:.0}")).unwrap_or_else(|| "—".into())
}

/// The Markdown of the limit section: DHP's checkpoints/s as a fraction of
/// each workload at each number of clients, with the verdict, and the CPU
/// each spends per checkpoint or transaction. `v` is `dhp-bench pg`'s JSON.
pub fn markdown(v: &Value) -> String {
    let rows: Vec<&Value> =
        v["aggregate"].as_array().into_iter().flatten().filter(|a| a["pgbench"].is_object()).collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\n### Against the limit: pgbench on the same server, same run\n\n\
         `{}` against the same server and settings, in a database of its own (`{DATABASE}`, `pgbench -i -s 1`), \
         `-M prepared`, `-j` = min(clients, cores), {} s per run, each run right after DHP's run with as many \
         workers. *one-round-trip*: one statement per transaction, `{}`; *-N*: pgbench's built-in simple update \
         (BEGIN, 3 statements, END: 5 round trips). DHP: `dhp-bench pg`'s worker processes, one handoff each, \
         `Runner::checkpoint` in a loop (one statement, one round trip, per checkpoint).\n\n\
         | clients = workers | DHP checkpoints/s | pgbench one-round-trip tps | DHP / one-round-trip | target | verdict \
         | pgbench -N tps | DHP / -N |\n|---:|---:|---:|---:|---:|---|---:|---:|\n",
        v["pgbench_bin"].as_str().unwrap_or("pgbench"),
        v["seconds"],
        ONE_TRIP_SQL.trim().replace('|', "\\|"),
    );
    for a in &rows {
        let dhp = a["postgres"].as_f64().unwrap_or(0.0);
        let one = a["pgbench"]["one_trip"]["tps"].as_f64().unwrap_or(0.0);
        let simple = a["pgbench"]["simple_update"]["tps"].as_f64().unwrap_or(0.0);
        let r1 = if one > 0.0 { dhp / one } else { 0.0 };
        let rn = if simple > 0.0 { dhp / simple } else { 0.0 };
        out += &format!(
            "| {} | {dhp:.0} | {one:.0} | {r1:.2}× | ≥ {TARGET}× | {} | {simple:.0} | {rn:.2}× |\n",
            a["processes"],
            verdict(r1, TARGET)
        );
    }
    out += "\nCPU per checkpoint (DHP) and per transaction (pgbench), µs (start-up included; the server's is the \
            postmaster's reaped backends):\n\n\
            | clients | DHP worker | DHP server | DHP total | one-round-trip pgbench | one-round-trip server | \
            one-round-trip total | -N pgbench | -N server | DHP server / one-round-trip server |\n\
            |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for a in &rows {
        let (dc, ds) = (&a["postgres_cpu"]["client_us"], &a["postgres_cpu"]["server_us"]);
        let (o, n) = (&a["pgbench"]["one_trip"], &a["pgbench"]["simple_update"]);
        let sum = |x: &Value, y: &Value| match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => json!(x + y),
            _ => Value::Null,
        };
        let ratio = match (ds.as_f64(), o["server_us"].as_f64()) {
            (Some(d), Some(p)) if p > 0.0 => format!("{:.2}×", d / p),
            _ => "—".into(),
        };
        out += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {ratio} |\n",
            a["processes"],
            us(dc),
            us(ds),
            us(&sum(dc, ds)),
            us(&o["client_us"]),
            us(&o["server_us"]),
            us(&sum(&o["client_us"], &o["server_us"])),
            us(&n["client_us"]),
            us(&n["server_us"]),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pgbench_summary_lines() {
        let text = "latency average = 0.189 ms\ninitial connection time = 3.1 ms\n\
                    number of transactions actually processed: 26410\ntps = 5282.021 (without initial connection time)\n";
        assert_eq!(summary_number(text, "tps ="), Some(5282.021));
        assert_eq!(summary_number(text, "latency average ="), Some(0.189));
        assert_eq!(summary_number(text, "number of transactions actually processed:"), Some(26410.0));
        assert_eq!(summary_number(text, "nothing"), None);
    }

    #[test]
    fn verdict_and_table_judge_against_the_one_trip_script() {
        assert_eq!(verdict(0.8, TARGET), "MET");
        assert_eq!(verdict(0.79, TARGET), "**MISSED**");
        let run = |tps: f64| json!({"tps": tps, "client_us": 10.0, "server_us": 50.0});
        let v = json!({"seconds": 5.0, "aggregate": [
            {"processes": 1, "postgres": 4500.0, "postgres_cpu": {"client_us": 60.0, "server_us": 100.0},
             "pgbench": {"one_trip": run(5000.0), "simple_update": run(2500.0)}},
            {"processes": 8, "postgres": 7000.0, "postgres_cpu": {"client_us": 60.0, "server_us": 100.0},
             "pgbench": {"one_trip": run(14000.0), "simple_update": run(7000.0)}}]});
        let md = markdown(&v);
        assert!(md.contains("| 1 | 4500 | 5000 | 0.90× | ≥ 0.8× | MET | 2500 | 1.80× |"), "{md}");
        assert!(md.contains("| 8 | 7000 | 14000 | 0.50× | ≥ 0.8× | **MISSED** | 7000 | 1.00× |"), "{md}");
        assert!(md.contains("| 1 | 60 | 100 | 160 | 10 | 50 | 60 | 10 | 50 | 2.00× |"), "{md}");
        assert!(markdown(&json!({"aggregate": []})).is_empty());
    }

    #[test]
    fn sqlite_writers_are_judged_against_one_writer() {
        let rows = |most: f64| {
            json!([{"procs": 1, "rate": 5000.0}, {"procs": 8, "rate": 5500.0},
                                      {"procs": 32, "rate": most}])
        };
        assert!(crate::scale::writers_verdict(&rows(3600.0)).contains("3600 / 5000 = 0.72× | MET |"));
        assert!(crate::scale::writers_verdict(&rows(3400.0)).contains("3400 / 5000 = 0.68× | **MISSED** |"));
        assert!(crate::scale::writers_verdict(&json!([{"procs": 1, "rate": 5000.0}])).is_empty());
        assert!(crate::scale::writers_verdict(&Value::Null).is_empty());
    }
}
