//! The PostgreSQL rows of `benches/compare.sh` (`dhp-bench pg`):
//! per-operation rates on a PostgreSQL store, aggregate checkpoints/s with
//! 1, 8 and 32 concurrent worker processes on SQLite and on PostgreSQL, and
//! kill -9 → orphaned latency through the advisory-lock liveness path.

use dhp_core::envelope::{self, BuildOptions};
use dhp_core::{Config, Error, Result, Runner};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Sizes of one run.
#[derive(Debug, Clone, Copy)]
pub struct PgSizes {
    /// Operations per measured row.
    pub ops: usize,
    /// Seconds per throughput run.
    pub seconds: f64,
    /// Workers killed in the recovery run.
    pub kills: usize,
    /// Worker process counts to measure.
    pub processes: &'static [usize],
    /// Interleaved rounds of the PostgreSQL throughput runs, judged by
    /// their median ([`crate::pg_rounds`]).
    pub rounds: usize,
}

impl PgSizes {
    /// The sizes of a full run.
    pub fn full() -> Self {
        PgSizes { ops: 2000, seconds: 5.0, kills: 40, processes: &[1, 8, 32], rounds: 3 }
    }
    /// Small sizes for a smoke run.
    pub fn quick() -> Self {
        PgSizes { ops: 50, seconds: 0.5, kills: 3, processes: &[1, 2], rounds: 2 }
    }
}

fn env(i: usize, tag: &str) -> Result<Value> {
    envelope::build("bench.pg", json!({"i": i, "tag": tag}), json!({}), BuildOptions::default())
}

fn rate(n: usize, t: Duration) -> f64 {
    n as f64 / t.as_secs_f64()
}

/// Per-operation rates, one process, one connection.
pub fn op_rates(url: &str, n: usize) -> Result<Value> {
    let cfg = Config { lease_interval_s: 60.0, ..Config::default() };
    let r = Runner::open(url, "bench-w", cfg.clone())?;
    let envs: Vec<Value> = (0..n).map(|i| env(i, "ops")).collect::<Result<_>>()?;
    let t = Instant::now();
    let hids: Vec<String> = envs.iter().map(|e| r.dispatch(e)).collect::<Result<_>>()?;
    let dispatch = rate(n, t.elapsed());
    let t = Instant::now();
    let ctxs: Vec<_> = hids.iter().map(|h| r.claim(h)).collect::<Result<_>>()?;
    let claim = rate(n, t.elapsed());
    let t = Instant::now();
    for i in 0..n {
        ctxs[0].checkpoint(&json!({"i": i}))?;
    }
    let checkpoint = rate(n, t.elapsed());
    let t = Instant::now();
    for _ in 0..n {
        ctxs[0].heartbeat()?;
    }
    let heartbeat = rate(n, t.elapsed());
    let t = Instant::now();
    for h in &hids {
        r.status(h)?;
    }
    let status = rate(n, t.elapsed());
    // Orphan then recover each (two CAS transactions per handoff).
    let sup = dhp_core::Supervisor::open(url, "bench-sup", cfg)?;
    for h in &hids {
        dhp_testkit::store::expire_lease(&r, h)?;
    }
    let t = Instant::now();
    for h in &hids {
        sup.orphan(h, dhp_core::supervisor::OrphanReason::LeaseExpired, None)?;
    }
    let orphan = rate(n, t.elapsed());
    let w2 = r.with_id("bench-w2")?;
    let t = Instant::now();
    for h in &hids {
        w2.recover(h)?;
    }
    let recover = rate(n, t.elapsed());
    Ok(json!({"n": n, "dispatch": dispatch, "claim": claim, "checkpoint": checkpoint, "heartbeat": heartbeat,
              "status": status, "orphan": orphan, "recover": recover}))
}

/// Child of [`aggregate`]: claim a handoff of its own, wait for the common
/// start time, checkpoint for `seconds`, print the count.
pub fn cp_worker(root: &str, id: &str, start_at: f64, seconds: f64) -> Result<u64> {
    let cfg = Config { lease_interval_s: 60.0, ..Config::default() };
    let r = Runner::open(root, id, cfg)?;
    let hid = r.dispatch(&env(0, id)?)?;
    let ctx = r.claim(&hid)?;
    let wait = start_at - envelope::now();
    if wait > 0.0 {
        std::thread::sleep(Duration::from_secs_f64(wait));
    }
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    let mut n = 0u64;
    while Instant::now() < end {
        ctx.checkpoint(&json!({"n": n}))?;
        n += 1;
    }
    Ok(n)
}

/// Aggregate checkpoints/s of `procs` concurrent worker processes, each on
/// its own handoff in the store at `root`.
pub fn aggregate(bench: &Path, root: &str, procs: usize, seconds: f64) -> Result<f64> {
    Ok(aggregate_with_cpu(bench, root, procs, seconds, None)?.rate)
}

/// One throughput run and where the machine's CPU went during it.
#[derive(Debug, Clone, Copy)]
pub struct AggregateRun {
    /// Aggregate checkpoints/s.
    pub rate: f64,
    /// CPU of the worker processes per checkpoint, µs (start-up included).
    pub client_us: f64,
    /// CPU of the PostgreSQL server per checkpoint, µs, when its
    /// postmaster runs on this machine.
    pub server_us: Option<f64>,
    /// Cores busy on the whole machine during the measured window.
    pub cores_busy: f64,
    /// Share of the window's CPU time the hypervisor took (steal), %.
    pub steal_pct: f64,
}

/// Busy and steal jiffies and the total, from the first line of /proc/stat.
fn machine_jiffies() -> (f64, f64, f64) {
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let f: Vec<f64> =
        text.lines().next().unwrap_or("").split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    let at = |i: usize| f.get(i).copied().unwrap_or(0.0);
    let total: f64 = f.iter().take(8).sum();
    let idle = at(3) + at(4);
    (total - idle, at(7), total)
}

/// CPU seconds of the children this process has waited for.
fn children_cpu_s() -> f64 {
    crate::scale::children_cpu_s(std::process::id()).unwrap_or(0.0)
}

/// [`aggregate`], also measuring the CPU of the workers, of the server
/// whose postmaster is `server_pid`, and of the whole machine.
pub fn aggregate_with_cpu(
    bench: &Path,
    root: &str,
    procs: usize,
    seconds: f64,
    server_pid: Option<u32>,
) -> Result<AggregateRun> {
    let (clients0, server0) = (children_cpu_s(), server_pid.and_then(crate::scale::cpu_with_children_s));
    let (rate, (busy, steal, total)) = aggregate_run(bench, root, procs, seconds)?;
    // Backends exit with their clients; the postmaster reaps them.
    std::thread::sleep(Duration::from_millis(300));
    let per = |cpu: f64| cpu * 1e6 / (rate * seconds).max(1.0);
    let server_us = match (server0, server_pid.and_then(crate::scale::cpu_with_children_s)) {
        (Some(a), Some(b)) => Some(per(b - a)),
        _ => None,
    };
    Ok(AggregateRun {
        rate,
        client_us: per(children_cpu_s() - clients0),
        server_us,
        cores_busy: busy / 100.0 / seconds, // USER_HZ
        steal_pct: steal / total.max(1.0) * 100.0,
    })
}

/// The run, and the machine's busy, steal and total jiffies during its
/// measured window (from the common start, for `seconds`).
fn aggregate_run(bench: &Path, root: &str, procs: usize, seconds: f64) -> Result<(f64, (f64, f64, f64))> {
    // Start together, after every process has connected and claimed.
    let start_at = envelope::now() + 2.0 + procs as f64 * 0.1;
    let children: Vec<Child> = (0..procs)
        .map(|i| {
            Command::new(bench)
                .args(["cp-worker", "--root", root, "--id", &format!("cw{i}"), "--start-at", &start_at.to_string()])
                .args(["--seconds", &seconds.to_string()])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| Error::Io { path: bench.to_path_buf(), source: e })
        })
        .collect::<Result<_>>()?;
    std::thread::sleep(Duration::from_secs_f64((start_at - envelope::now()).max(0.0)));
    let before = machine_jiffies();
    std::thread::sleep(Duration::from_secs_f64(seconds));
    let after = machine_jiffies();
    let window = (after.0 - before.0, after.1 - before.1, after.2 - before.2);
    let mut total = 0u64;
    for c in children {
        let out = c.wait_with_output().map_err(|e| Error::Io { path: bench.to_path_buf(), source: e })?;
        let text = String::from_utf8_lossy(&out.stdout);
        let n: u64 = text.trim().parse().map_err(|_| {
            Error::validation(format!("cp-worker failed: {text} {}", String::from_utf8_lossy(&out.stderr)))
        })?;
        total += n;
    }
    Ok((total as f64 / seconds, window))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

struct Reap(Child);

impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn_dhp(dhp: &Path, args: &[&str]) -> Result<Reap> {
    Command::new(dhp)
        .args(args)
        // A 30 s lease: anything orphaned within milliseconds is liveness.
        .env("DHP_LEASE_INTERVAL_S", "10")
        .env("DHP_LEASE_MAX_MISSED", "3")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map(Reap)
        .map_err(|e| Error::Io { path: dhp.to_path_buf(), source: e })
}

/// kill -9 → orphaned on PostgreSQL, `kills` times, with a supervisor and
/// four live workers running throughout; returns latencies (ms) and how
/// many live workers were orphaned (false orphans).
pub fn kill_to_orphaned(dhp: &Path, url: &str, kills: usize) -> Result<Value> {
    let r = Runner::open(url, "bench-observer", Config::default())?;
    let census = |lo: u64, span: u64| -> Result<String> {
        let e = envelope::build(
            dhp_workload::census::KIND,
            dhp_workload::census::inputs(lo, lo + span, 100),
            dhp_workload::census::output_schema(),
            BuildOptions { budget: Some(json!({"max_steps": 1_000_000, "max_attempts": 5})), ..Default::default() },
        )?;
        r.dispatch(&e)
    };
    let _sup = spawn_dhp(dhp, &["supervisor", url, "bench-sup", "3600"])?;
    let mut live = Vec::new();
    let mut live_hids = Vec::new();
    for i in 0..4u64 {
        let hid = census(50_000_000 + i * 10_000_000, 5_000_000)?;
        live.push(spawn_dhp(dhp, &["work", url, "--runner", &format!("live{i}"), "claim", &hid, "--pace", "0.05"])?);
        live_hids.push(hid);
    }
    let mut ms = Vec::with_capacity(kills);
    for k in 0..kills {
        let hid = census(1_000_000 + k as u64 * 1_000_000, 500_000)?;
        let mut w = spawn_dhp(dhp, &["work", url, "--runner", &format!("victim{k}"), "claim", &hid, "--pace", "0.01"])?;
        let ready = Instant::now() + Duration::from_secs(30);
        while r.status(&hid)?["checkpoints"].as_i64().unwrap_or(0) < 2 {
            if Instant::now() > ready {
                return Err(Error::validation(format!("victim {k} made no progress")));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        w.0.kill().map_err(|e| Error::Io { path: dhp.to_path_buf(), source: e })?;
        let t0 = Instant::now();
        let _ = w.0.wait();
        loop {
            if r.status(&hid)?["status"] == "orphaned" {
                break;
            }
            if t0.elapsed() > Duration::from_secs(60) {
                return Err(Error::validation(format!("victim {k} not orphaned within 60 s")));
            }
            std::thread::sleep(Duration::from_micros(500));
        }
        ms.push(t0.elapsed().as_secs_f64() * 1000.0);
    }
    let false_orphans = live_hids
        .iter()
        .map(|h| r.status(h).map(|s| s["attempt"].as_i64().unwrap_or(0) > 0 || s["status"] == "orphaned"))
        .collect::<Result<Vec<bool>>>()?
        .into_iter()
        .filter(|b| *b)
        .count();
    drop(live);
    let mut sorted = ms.clone();
    sorted.sort_by(f64::total_cmp);
    Ok(json!({"kills": kills, "median_ms": percentile(&sorted, 0.5), "p99_ms": percentile(&sorted, 0.99),
              "max_ms": sorted.last().copied().unwrap_or(f64::NAN), "false_orphans": false_orphans,
              "live_workers": live_hids.len()}))
}

/// The 1-, 5- and 15-minute load averages of this machine, as text.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// The server's durability and group-commit settings, as the server
/// reports them (not as the caller believes they are).
pub fn server_settings(url: &str) -> Result<Value> {
    let loc = match dhp_core::store::StoreLocation::parse(url)? {
        dhp_core::store::StoreLocation::Postgres(p) => p,
        other => return Err(Error::validation(format!("not a PostgreSQL URL: {other}"))),
    };
    let mut c = postgres::Client::connect(&loc.url, postgres::NoTls)
        .map_err(|e| Error::validation_from(format!("reading the server settings: {e}"), e))?;
    let rows = c
        .query(
            "SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'commit_delay', \
             'commit_siblings', 'wal_sync_method', 'full_page_writes', 'server_version') ORDER BY name",
            &[],
        )
        .map_err(|e| Error::validation_from(format!("reading the server settings: {e}"), e))?;
    Ok(Value::Object(rows.iter().map(|r| (r.get::<_, String>(0), Value::String(r.get(1)))).collect()))
}

/// The postmaster of the server at `url`, if it runs on this machine: the
/// parent of this connection's backend, when /proc knows it as `postgres`.
pub fn postmaster_pid(url: &str) -> Option<u32> {
    let loc = match dhp_core::store::StoreLocation::parse(url).ok()? {
        dhp_core::store::StoreLocation::Postgres(p) => p,
        _ => return None,
    };
    let mut c = postgres::Client::connect(&loc.url, postgres::NoTls).ok()?;
    let backend: i32 = c.query_one("SELECT pg_backend_pid()", &[]).ok()?.get(0);
    let pm = crate::scale::parent_pid(u32::try_from(backend).ok()?)?;
    let comm = std::fs::read_to_string(format!("/proc/{pm}/comm")).ok()?;
    comm.trim().starts_with("postgres").then_some(pm)
}

fn cpu_json(a: &AggregateRun) -> Value {
    json!({"client_us": a.client_us, "server_us": a.server_us, "cores_busy": a.cores_busy, "steal_pct": a.steal_pct})
}

/// Everything, as JSON.
pub fn run(bench: &Path, dhp: &Path, url: &str, scratch: &Path, s: PgSizes, log: impl Fn(&str)) -> Result<Value> {
    let schema = |tag: &str| {
        let sep = if url.contains('?') { '&' } else { '?' };
        format!("{url}{sep}schema=bench_{tag}_{}", std::process::id())
    };
    let settings = server_settings(url)?;
    let postmaster = postmaster_pid(url);
    let load_start = loadavg();
    log("per-operation rates");
    let ops = op_rates(&schema("ops"), s.ops)?;
    log("pgbench set-up (its own database)");
    let limit = crate::pg_limit::prepare(url, scratch)?;
    let mut agg = Vec::new();
    for &p in s.processes {
        let dir = scratch.join(format!("agg-sqlite-{p}"));
        std::fs::create_dir_all(&dir).map_err(|e| Error::Io { path: dir.clone(), source: e })?;
        log(&format!("{p} worker processes on SQLite"));
        let sqlite = aggregate_with_cpu(bench, &dir.to_string_lossy(), p, s.seconds, None)?;
        let mut a = postgres_rounds(bench, &limit, &schema, p, &s, postmaster, &log)?;
        a["sqlite"] = json!(sqlite.rate);
        a["sqlite_cpu"] = cpu_json(&sqlite);
        agg.push(a);
    }
    log("kill -9 → orphaned");
    let kill = kill_to_orphaned(dhp, &schema("kill"), s.kills)?;
    Ok(json!({"ops": ops, "aggregate": agg, "kill": kill, "seconds": s.seconds, "rounds": s.rounds, "server": settings,
              "load_start": load_start, "load_end": loadavg(),
              "pgbench_bin": limit.bin().file_name().map(|n| n.to_string_lossy().into_owned())}))
}

/// `s.rounds` interleaved rounds of DHP's `p` workers on PostgreSQL, each
/// right followed by every pgbench workload with as many clients: the
/// element-wise median, with each round under `rounds`.
fn postgres_rounds(
    bench: &Path,
    limit: &crate::pg_limit::Target,
    schema: &dyn Fn(&str) -> String,
    p: usize,
    s: &PgSizes,
    postmaster: Option<u32>,
    log: &dyn Fn(&str),
) -> Result<Value> {
    // The client's limit: pgbench calling DHP's own function, on handoffs of its own.
    let store = schema(&format!("call{p}"));
    let hids = crate::pg_call::prepare(limit, &store, p)?;
    let (mut calls, mut rounds) = (0, Vec::new());
    let n = s.rounds.max(1);
    for r in 0..n {
        log(&format!("{p} worker processes on PostgreSQL (round {} of {n})", r + 1));
        let pg = aggregate_with_cpu(bench, &schema(&format!("agg{p}r{r}")), p, s.seconds, postmaster)?;
        // The limit, right after DHP's run with as many workers.
        let mut bench = json!({});
        for w in [crate::pg_limit::Workload::OneTrip, crate::pg_limit::Workload::SimpleUpdate]
            .into_iter()
            .chain(crate::pg_call::WORKLOADS)
        {
            log(&format!("pgbench {} with {p} clients", w.key()));
            let run = crate::pg_limit::run_once(limit, w, p, s.seconds, postmaster)?;
            if crate::pg_call::WORKLOADS.contains(&w) {
                calls += run.transactions;
            }
            bench[w.key()] = crate::pg_limit::run_json(&run);
        }
        rounds.push(json!({"postgres": pg.rate, "postgres_cpu": cpu_json(&pg), "pgbench": bench}));
    }
    let written = crate::pg_call::written(&store, &hids)?;
    if written != calls {
        return Err(Error::validation(format!("pgbench made {calls} checkpoint calls, {written} were written")));
    }
    let mut a = crate::pg_rounds::median(&rounds);
    a["processes"] = json!(p);
    a["load_after"] = json!(loadavg());
    a["each_round"] = json!(rounds);
    Ok(a)
}

/// Where the CPU went in each throughput run, and what it allows: with
/// every core busy, checkpoints/s cannot exceed cores × 10⁶ / (worker +
/// server µs per checkpoint).
fn cpu_table(v: &Value) -> String {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let mut out = format!(
        "\nWhere the CPU went (this machine: {cores} cores; worker and server CPU per checkpoint include \
         their start-up; cores busy and steal over the measured window):\n\n\
         | processes | store | checkpoints/s | worker CPU µs/checkpoint | server CPU µs/checkpoint | cores busy | steal | \
         ceiling at {cores} cores busy |\n|---:|---|---:|---:|---:|---:|---:|---:|\n"
    );
    for a in v["aggregate"].as_array().into_iter().flatten() {
        for (name, rate, cpu) in
            [("SQLite", &a["sqlite"], &a["sqlite_cpu"]), ("PostgreSQL", &a["postgres"], &a["postgres_cpu"])]
        {
            let (client, server) = (cpu["client_us"].as_f64(), cpu["server_us"].as_f64());
            let spent = client.map(|c| c + server.unwrap_or(0.0));
            let ceiling = spent.filter(|s| *s > 0.0).map(|s| format!("{:.0}", cores as f64 * 1e6 / s));
            out += &format!(
                "| {} | {name} | {:.0} | {} | {} | {} | {} | {} |\n",
                a["processes"],
                rate.as_f64().unwrap_or(f64::NAN),
                client.map(|c| format!("{c:.0}")).unwrap_or_else(|| "—".into()),
                if name == "SQLite" {
                    "(none)".into()
                } else {
                    server.map(|c| format!("{c:.0}")).unwrap_or_else(|| "not local".into())
                },
                cpu["cores_busy"].as_f64().map(|c| format!("{c:.2}")).unwrap_or_else(|| "—".into()),
                cpu["steal_pct"].as_f64().map(|c| format!("{c:.1} %")).unwrap_or_else(|| "—".into()),
                ceiling.unwrap_or_else(|| "—".into()),
            );
        }
    }
    out
}

/// The Markdown section for RESULTS.md.
pub fn markdown(v: &Value) -> String {
    let f = |x: &Value| x.as_f64().map(|n| format!("{n:.0}")).unwrap_or_else(|| "—".into());
    let mut out = String::from("\n## PostgreSQL store\n\n");
    let set = |k: &str| v["server"][k].as_str().unwrap_or("?").to_string();
    out += &format!(
        "A PostgreSQL {} cluster on this machine (scripts/pg.sh), reached over TCP on 127.0.0.1; same run as the \
         tables above. Server settings, as the server reports them: `fsync={}`, `synchronous_commit={}`, \
         `wal_sync_method={}`, `commit_delay={}` µs, `commit_siblings={}`. Load average (1/5/15 min) {} at the \
         start of this section, {} at its end; SQLite is this build's (same run, same disk). Checkpoints on \
         PostgreSQL are one round trip each (server-side function). See docs/postgres.md.\n\n",
        set("server_version"),
        set("fsync"),
        set("synchronous_commit"),
        set("wal_sync_method"),
        set("commit_delay"),
        set("commit_siblings"),
        v["load_start"].as_str().unwrap_or("?"),
        v["load_end"].as_str().unwrap_or("?"),
    );
    out += "| operation (one process, one connection) | ops/s |\n|---|---:|\n";
    for k in ["dispatch", "claim", "checkpoint", "heartbeat", "status", "orphan", "recover"] {
        out += &format!("| {k} | {} |\n", f(&v["ops"][k]));
    }
    if let Some(n) = v["rounds"].as_u64().filter(|n| *n > 1) {
        out += &format!(
            "\nEvery PostgreSQL throughput figure below (DHP's workers, their CPU, every pgbench workload) is the \
             element-wise median of {n} interleaved rounds, each round DHP's run then every pgbench workload with \
             as many clients; the verdicts judge the medians, and each round's figures follow the tables. SQLite's are one run.\n"
        );
    }
    out += "\n| concurrent worker processes | SQLite checkpoints/s | PostgreSQL checkpoints/s | PostgreSQL / SQLite | load after |\n|---:|---:|---:|---:|---|\n";
    for a in v["aggregate"].as_array().into_iter().flatten() {
        let (s, p) = (a["sqlite"].as_f64().unwrap_or(0.0), a["postgres"].as_f64().unwrap_or(0.0));
        let load = a["load_after"].as_str().unwrap_or("?");
        out += &format!("| {} | {:.0} | {:.0} | {:.2}× | {load} |\n", a["processes"], s, p, p / s);
    }
    out += &cpu_table(v);
    out += &crate::pg_limit::markdown(v);
    out += &crate::pg_call::markdown(v);
    out += &crate::pg_rounds::markdown(v);
    let k = &v["kill"];
    out += &format!(
        "\nkill -9 → orphaned (advisory-lock liveness, 30 s lease, {} kills, {} live workers alongside): \
         median {:.1} ms, p99 {:.1} ms, max {:.1} ms; false orphans: {}.\n",
        k["kills"],
        k["live_workers"],
        k["median_ms"].as_f64().unwrap_or(f64::NAN),
        k["p99_ms"].as_f64().unwrap_or(f64::NAN),
        k["max_ms"].as_f64().unwrap_or(f64::NAN),
        k["false_orphans"]
    );
    out += "\n| target | wanted | measured | verdict |\n|---|---|---|---|\n";
    for a in v["aggregate"].as_array().into_iter().flatten() {
        let one = a["pgbench"]["one_trip"]["tps"].as_f64().unwrap_or(0.0);
        let p = a["postgres"].as_f64().unwrap_or(0.0);
        let r = if one > 0.0 { p / one } else { 0.0 };
        out += &format!(
            "| PostgreSQL checkpoints/s, {} workers | ≥ {} × pgbench's one-round-trip tps, {} clients | \
             {p:.0} / {one:.0} = {r:.2}× | {} |\n",
            a["processes"],
            crate::pg_limit::TARGET,
            a["processes"],
            crate::pg_limit::verdict(r, crate::pg_limit::TARGET)
        );
    }
    let (med, p99) = (k["median_ms"].as_f64().unwrap_or(f64::NAN), k["p99_ms"].as_f64().unwrap_or(f64::NAN));
    out += &format!(
        "| kill → orphaned median | ≤ 100 ms | {med:.1} ms | {} |\n",
        if med <= 100.0 { "MET" } else { "**MISSED**" }
    );
    out += &format!(
        "| kill → orphaned p99 | ≤ 250 ms | {p99:.1} ms | {} |\n",
        if p99 <= 250.0 { "MET" } else { "**MISSED**" }
    );
    let fo = k["false_orphans"].as_i64().unwrap_or(-1);
    out += &format!("| false orphans | 0 | {fo} | {} |\n", if fo == 0 { "MET" } else { "**MISSED**" });
    out
}
