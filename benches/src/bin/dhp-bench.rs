//! `dhp-bench`: the dhp-core half of `benches/compare.sh`.
//!
//! The commands and their options: [`HELP`] (`dhp-bench --help`).

use dhp_benches::{measure, report, suite};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const HELP: &str = r#"usage:
  dhp-bench fixtures --dir D [--quick]      shared fixtures (ingest log, scan stores)
  dhp-bench run --dir D [--quick] --out F   measure dhp-core, write JSON results
  dhp-bench rss --dhp BIN --dir D --out F   peak RSS of `dhp work` on a census handoff
  dhp-bench peak-rss --out F [--label L] [--census C] -- CMD...   peak RSS of any command
  dhp-bench report --ours F --ref F --rss-ours F --rss-ref F --machine F [--rss-ours-min F] [--command C]
  dhp-bench machine --dir D --out F         machine description (JSON)
  dhp-bench pg --url URL --dhp BIN --dir D --out F --md F [--quick]   PostgreSQL rows
  dhp-bench tcp --dhp BIN --dir D [--quick] --out F --md F [--soak F]   TCP shipping rates, hostile RSS
  dhp-bench tcp-sync --dir D [--shippers 1,8,32] [--n N] [--reps R] --out F --md F   sync rates, fsync on/off, by concurrency
  dhp-bench tcp-hostile --dhp BIN --dir D [--n N] --out F   server RSS before/during/after N hostile connections
  dhp-bench tcp-soak --dhp BIN --dir D [--handoffs N] [--every K] [--shippers S] [--max-seconds T] --out F   server RSS over N handoffs
  dhp-bench cp-worker --root R --id I --start-at T --seconds S   (child of `pg`)
  dhp-bench checkpoint --dir D [--depth N] [--n K]   ad-hoc checkpoint probe
  dhp-bench scan --dir D [--n N] [--reps R]          ad-hoc supervisor-scan probe
  dhp-bench scale --dir D --dhp BIN --out F --md F [--py PY] [--only scan,big,writers,kill]
      [--sizes 1000,10000,100000] [--big N] [--big-running N] [--procs 1,8,32] [--seconds S]
      [--kills K] [--kill-running N] [--reps R] [--before-bench B] [--before-dhp D]
                                                     issue 21's tables (docs/scale.md)
  dhp-bench scale-idle --dir D --dhp BIN[,BIN...] [--running N] [--rounds R] [--seconds S]
                                                     an idle `dhp supervisor`'s CPU, builds side by side
  dhp-bench scale-fill --root R [--running N]       a store of N running handoffs to probe by hand
                                                     (e.g. `perf record` a `dhp supervisor` on it)
  dhp-bench ingest --dir D [--lines N] [--reps R]     ad-hoc ingest probe
  dhp-bench dispatch --dir D [--n N] [--claim] [--pages M]
                                                     ad-hoc dispatch (or claim) probe; with --pages,
                                                     M more calls' WAL pages by table and index
"#;

/// A command line it cannot run: the usage on stderr, exit 2.
fn usage() -> ! {
    eprint!("dhp-bench: {HELP}");
    std::process::exit(2);
}

struct Args {
    rest: Vec<String>,
}

impl Args {
    fn flag(&self, name: &str) -> bool {
        self.rest.iter().any(|a| a == name)
    }
    fn opt(&self, name: &str) -> Option<String> {
        self.rest.iter().position(|a| a == name).and_then(|i| self.rest.get(i + 1)).cloned()
    }
    fn path(&self, name: &str) -> PathBuf {
        self.opt(name).map(PathBuf::from).unwrap_or_else(|| {
            eprintln!("dhp-bench: missing {name}");
            usage()
        })
    }
}

fn read_json(p: &Path) -> Value {
    std::fs::read_to_string(p).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_else(|| json!({}))
}

fn write_json(p: &Path, v: &Value) {
    let text = serde_json::to_string_pretty(v).expect("results serialize");
    if let Err(e) = std::fs::write(p, text + "\n") {
        eprintln!("dhp-bench: {}: {e}", p.display());
        std::process::exit(1);
    }
}

fn fail(e: impl std::fmt::Display) -> ! {
    eprintln!("dhp-bench: {e}");
    std::process::exit(1);
}

fn sizes(a: &Args) -> suite::Sizes {
    if a.flag("--quick") {
        suite::Sizes::quick()
    } else {
        suite::Sizes::full()
    }
}

fn main() {
    let mut argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.is_empty() {
        usage();
    }
    let cmd = argv.remove(0);
    if matches!(cmd.as_str(), "--help" | "-h" | "help") {
        print!("dhp-bench: {HELP}");
        return;
    }
    let a = Args { rest: argv };
    match cmd.as_str() {
        "fixtures" => cmd_fixtures(&a),
        "run" => cmd_run(&a),
        "rss" => cmd_rss(&a),
        "peak-rss" => cmd_peak_rss(&a),
        "pg" => cmd_pg(&a),
        "tcp" => cmd_tcp(&a),
        "tcp-sync" => cmd_tcp_sync(&a),
        "tcp-hostile" => cmd_tcp_hostile(&a),
        "tcp-soak" => cmd_tcp_soak(&a),
        "cp-worker" => cmd_cp_worker(&a),
        "checkpoint" => cmd_checkpoint(&a),
        "scale" => cmd_scale(&a),
        "scale-idle" => cmd_scale_idle(&a),
        "scale-fill" => cmd_scale_fill(&a),
        "scan" => cmd_scan(&a),
        "ingest" => cmd_ingest(&a),
        "lock-race" => cmd_lock_race(&a),
        "dispatch" => cmd_dispatch(&a),
        "machine" => cmd_machine(&a),
        "report" => cmd_report(&a),
        _ => usage(),
    }
}

/// `dhp-bench fixtures`: shared fixtures (ingest log, scan stores) and their description.
fn cmd_fixtures(a: &Args) {
    let dir = a.path("--dir");
    let s = sizes(a);
    suite::make_fixtures(&dir, &s).unwrap_or_else(|e| fail(e));
    write_json(
        &dir.join("fixtures.json"),
        &json!({"quick": s.quick, "ingest_lines": s.ingest_lines, "scan_handoffs": s.scan_handoffs,
                "log": dir.join("ingest.log"), "scan_ref": dir.join("scan-py"), "work": dir.join("work")}),
    );
}

/// `dhp-bench run`: measure dhp-core on the fixtures; the JSON results.
fn cmd_run(a: &Args) {
    let dir = a.path("--dir");
    let out = a.path("--out");
    let s = sizes(a);
    let fx = suite::Fixtures { work: dir.join("work"), log: dir.join("ingest.log"), scan_root: dir.join("scan-rs") };
    if !fx.log.exists() {
        fail(format!("no fixtures in {}: run `dhp-bench fixtures` first", dir.display()));
    }
    let v = suite::run_ours(&s, &fx, |line| eprintln!("dhp-rs {line}")).unwrap_or_else(|e| fail(e));
    write_json(&out, &v);
}

/// `dhp-bench rss`: peak RSS of `dhp work` on a census handoff.
fn cmd_rss(a: &Args) {
    let dhp = a.path("--dhp");
    let dir = a.path("--dir");
    let out = a.path("--out");
    let v = suite::worker_rss(&dhp, &dir, 0, 200_000, 2_000).unwrap_or_else(|e| fail(e));
    write_json(&out, &v);
}

/// `dhp-bench peak-rss`: peak RSS of any command: `peak-rss --out F [--label L] -- CMD ARGS...`.
fn cmd_peak_rss(a: &Args) {
    let out = a.path("--out");
    let Some(sep) = a.rest.iter().position(|x| x == "--") else { usage() };
    let argv = &a.rest[sep + 1..];
    if argv.is_empty() {
        usage();
    }
    let mut cmd = std::process::Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    let p = measure::peak_rss(&mut cmd).unwrap_or_else(|e| fail(e));
    if p.exit_code != Some(0) {
        fail(format!("{argv:?} failed ({:?}): {} {}", p.exit_code, p.stdout, p.stderr));
    }
    let mut v = json!({"max_rss_kib": p.vm_hwm_kib, "method": "VmHWM at PTRACE_EVENT_EXIT",
                       "detail": {"worker": a.opt("--label").unwrap_or_else(|| argv.join(" ")),
                                  "anon_kib_at_exit": p.anon_kib, "file_kib_at_exit": p.file_kib,
                                  "top_mappings_at_exit": p.top_mappings,
                                  "elapsed_s": p.elapsed_s, "result": p.stdout.trim().lines().last().unwrap_or("")}});
    if let Some(c) = a.opt("--census") {
        v["census"] = json!(c);
    }
    write_json(&out, &v);
}

/// `dhp-bench pg`: the PostgreSQL rows.
fn cmd_pg(a: &Args) {
    let url = a.opt("--url").unwrap_or_else(|| usage());
    let dir = a.path("--dir");
    let sizes = if a.flag("--quick") { dhp_benches::pg::PgSizes::quick() } else { dhp_benches::pg::PgSizes::full() };
    let me = std::env::current_exe().unwrap_or_else(|e| fail(e));
    let v = dhp_benches::pg::run(&me, &a.path("--dhp"), &url, &dir, sizes, |l| eprintln!("dhp-rs pg: {l}"))
        .unwrap_or_else(|e| fail(e));
    write_json(&a.path("--out"), &v);
    std::fs::write(a.path("--md"), dhp_benches::pg::markdown(&v)).unwrap_or_else(|e| fail(e));
}

/// `dhp-bench tcp`: TCP shipping rates (and the soak's table, when given).
fn cmd_tcp(a: &Args) {
    let sizes = if a.flag("--quick") {
        dhp_benches::tcp_rates::TcpSizes::quick()
    } else {
        dhp_benches::tcp_rates::TcpSizes::full()
    };
    let v = dhp_benches::tcp_rates::run(&a.path("--dir"), &a.path("--dhp"), &sizes).unwrap_or_else(|e| fail(e));
    write_json(&a.path("--out"), &v);
    let soak = a.opt("--soak").map(|p| read_json(Path::new(&p)));
    let md = dhp_benches::tcp_rates::markdown(&v, soak.as_ref().filter(|s| s.get("samples").is_some()));
    if let Err(e) = std::fs::write(a.path("--md"), md) {
        fail(e);
    }
}

/// `dhp-bench tcp-sync`: synchronous shipping rates by concurrency, fsync on and off.
fn cmd_tcp_sync(a: &Args) {
    let shippers: Vec<usize> = a
        .opt("--shippers")
        .unwrap_or_else(|| "1,8,32".into())
        .split(',')
        .filter_map(|x| x.trim().parse().ok())
        .filter(|&x| x > 0)
        .collect();
    let n = a.opt("--n").and_then(|v| v.parse().ok()).unwrap_or(300usize).max(1);
    let reps = a.opt("--reps").and_then(|v| v.parse().ok()).unwrap_or(3usize).max(1);
    let v = dhp_benches::tcp_sync::run(&a.path("--dir"), &shippers, n, reps).unwrap_or_else(|e| fail(e));
    write_json(&a.path("--out"), &v);
    if let Err(e) = std::fs::write(a.path("--md"), dhp_benches::tcp_sync::markdown(&v)) {
        fail(e);
    }
}

/// `dhp-bench tcp-hostile`: the server's RSS before, during and after hostile connections.
fn cmd_tcp_hostile(a: &Args) {
    let n = a.opt("--n").and_then(|v| v.parse().ok()).unwrap_or(1_000usize).max(1);
    let v = dhp_benches::tcp_rates::hostile_rss(&a.path("--dhp"), &a.path("--dir"), n).unwrap_or_else(|e| fail(e));
    write_json(&a.path("--out"), &v);
}

/// `dhp-bench tcp-soak`: the server's RSS over many handoffs.
fn cmd_tcp_soak(a: &Args) {
    let n = a.opt("--handoffs").and_then(|v| v.parse().ok()).unwrap_or(1_000_000u64);
    let every = a.opt("--every").and_then(|v| v.parse().ok()).unwrap_or(100_000u64).max(1);
    let shippers = a.opt("--shippers").and_then(|v| v.parse().ok()).unwrap_or(16u64).max(1);
    let max = a.opt("--max-seconds").and_then(|v| v.parse().ok()).unwrap_or(7200u64);
    let max = std::time::Duration::from_secs(max);
    let v = dhp_benches::tcp_soak::soak(&a.path("--dhp"), &a.path("--dir"), n, every, shippers, max)
        .unwrap_or_else(|e| fail(e));
    write_json(&a.path("--out"), &v);
}

/// `dhp-bench cp-worker`: a checkpointing worker (a child of `pg`): prints its count.
fn cmd_cp_worker(a: &Args) {
    let num = |k: &str| a.opt(k).and_then(|v| v.parse::<f64>().ok()).unwrap_or_else(|| usage());
    let root = a.opt("--root").unwrap_or_else(|| usage());
    let id = a.opt("--id").unwrap_or_else(|| usage());
    let n = dhp_benches::pg::cp_worker(&root, &id, num("--start-at"), num("--seconds")).unwrap_or_else(|e| fail(e));
    println!("{n}");
}

/// `dhp-bench checkpoint`: ad-hoc probe (e.g. under strace): K checkpoints after DEPTH earlier ones.
fn cmd_checkpoint(a: &Args) {
    let dir = a.path("--dir");
    let depth: i64 = a.opt("--depth").and_then(|v| v.parse().ok()).unwrap_or(100);
    let k: usize = a.opt("--n").and_then(|v| v.parse().ok()).unwrap_or(1000);
    let mut bed = dhp_benches::fixture::CheckpointBed::new(&dir, depth).unwrap_or_else(|e| fail(e));
    let r = measure::rate(1, k, |_| bed.checkpoint().map(drop)).unwrap_or_else(|e| fail(e));
    println!("{r:.1} checkpoints/s after {depth}");
}

/// `dhp-bench scale`: issue 21's tables (docs/scale.md).
fn cmd_scale(a: &Args) {
    let dir = a.path("--dir");
    let dhp = a.path("--dhp");
    let py = a.opt("--py").map(PathBuf::from);
    let list = |k: &str, d: &str| -> Vec<usize> {
        a.opt(k).unwrap_or_else(|| d.into()).split(',').filter_map(|x| x.trim().parse().ok()).collect()
    };
    let num = |k: &str, d: usize| a.opt(k).and_then(|v| v.parse().ok()).unwrap_or(d);
    let only = a.opt("--only").unwrap_or_else(|| "scan,big,writers,kill".into());
    let want = |k: &str| only.split(',').any(|x| x == k);
    let reps = num("--reps", 20);
    let seconds = a.opt("--seconds").and_then(|v| v.parse().ok()).unwrap_or(5.0);
    let log = |m: &str| eprintln!("dhp-bench scale: {m} (load {:.1})", measure::loadavg());
    let mut out = json!({});
    if want("scan") {
        let mut rows = Vec::new();
        for n in list("--sizes", "1000,10000,100000") {
            log(&format!("scan and liveness poll at {n} running"));
            rows.push(dhp_benches::scale::scan_row(&dir, &dhp, py.as_deref(), n, reps).unwrap_or_else(|e| fail(e)));
        }
        out["scan"] = json!(rows);
    }
    if want("big") {
        let (total, running) = (num("--big", 1_000_000), num("--big-running", 10_000));
        log(&format!("a store of {total} handoffs"));
        out["big"] = dhp_benches::scale::big_row(&dir, &dhp, total, running, reps).unwrap_or_else(|e| fail(e));
    }
    if want("writers") {
        let procs = list("--procs", "1,8,32");
        let me = std::env::current_exe().unwrap_or_else(|e| fail(e));
        log("writer processes");
        out["writers"] = dhp_benches::scale::writers_row(&dir, &me, &procs, seconds).unwrap_or_else(|e| fail(e));
        if let Some(before) = a.opt("--before-bench") {
            log("writer processes, before");
            out["writers_before"] =
                dhp_benches::scale::writers_row(&dir, Path::new(&before), &procs, seconds).unwrap_or_else(|e| fail(e));
        }
    }
    if want("kill") {
        let (running, kills) = (num("--kill-running", 100_000), num("--kills", 20));
        log(&format!("kill -9 -> orphaned at {running} running"));
        out["kill"] = dhp_benches::scale::kill_row(&dir, &dhp, running, kills).unwrap_or_else(|e| fail(e));
        if let Some(before) = a.opt("--before-dhp") {
            log("kill -9 -> orphaned, before");
            out["kill_before"] =
                dhp_benches::scale::kill_row(&dir, Path::new(&before), running, kills).unwrap_or_else(|e| fail(e));
        }
    }
    write_json(&a.path("--out"), &out);
    let md = dhp_benches::scale::markdown(&out);
    std::fs::write(a.path("--md"), &md).unwrap_or_else(|e| fail(e));
    print!("{md}");
}

/// `dhp-bench scale-idle`: an idle `dhp supervisor`'s CPU, builds side by side.
fn cmd_scale_idle(a: &Args) {
    let dir = a.path("--dir");
    let dhps: Vec<PathBuf> = a.opt("--dhp").unwrap_or_else(|| usage()).split(',').map(PathBuf::from).collect();
    let num = |k: &str, d: usize| a.opt(k).and_then(|v| v.parse().ok()).unwrap_or(d);
    let secs = a.opt("--seconds").and_then(|v| v.parse::<f64>().ok()).unwrap_or(30.0);
    let window = std::time::Duration::try_from_secs_f64(secs).unwrap_or_else(|e| fail(e));
    let out = dhp_benches::scale::idle_rows(&dir, &dhps, num("--running", 100_000), num("--rounds", 1), window)
        .unwrap_or_else(|e| fail(e));
    println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
}

/// `dhp-bench scale-fill`: a store of N running handoffs to probe by hand.
fn cmd_scale_fill(a: &Args) {
    let root = a.path("--root");
    let running = a.opt("--running").and_then(|v| v.parse().ok()).unwrap_or(100_000);
    dhp_benches::scale::fill(&root, 10_000_000, running, 0).unwrap_or_else(|e| fail(e));
    println!("{}", root.display());
}

/// `dhp-bench scan`: ad-hoc probe (e.g. under perf): REPS scans over N running handoffs.
fn cmd_scan(a: &Args) {
    let dir = a.path("--dir");
    let n: usize = a.opt("--n").and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let reps: usize = a.opt("--reps").and_then(|v| v.parse().ok()).unwrap_or(20);
    let root = dhp_benches::fixture::fresh_root(&dir, "scanprobe");
    dhp_benches::fixture::scan_store(&root, n).unwrap_or_else(|e| fail(e));
    let sup = dhp_core::Supervisor::open(&root, "bench-sup", dhp_benches::fixture::bench_config())
        .unwrap_or_else(|e| fail(e));
    let r = measure::rate(1, reps, |_| sup.scan().map(drop)).unwrap_or_else(|e| fail(e));
    println!("{r:.2} scans/s over {n} running handoffs");
    let d = measure::rate(1, reps, |_| sup.dead_workers().map(drop)).unwrap_or_else(|e| fail(e));
    println!("  Supervisor::dead_workers alone (run every liveness poll between scans): {:.1} ms", 1e3 / d);
    let _ = std::fs::remove_dir_all(&root);
}

/// `dhp-bench ingest`: ad-hoc probe (e.g. under perf): ingest a LINES-line log REPS times.
fn cmd_ingest(a: &Args) {
    let dir = a.path("--dir");
    let lines: usize = a.opt("--lines").and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let reps: usize = a.opt("--reps").and_then(|v| v.parse().ok()).unwrap_or(10);
    let logp = dir.join("probe-ingest.log");
    dhp_benches::fixture::write_log(&logp, lines).unwrap_or_else(|e| fail(e));
    let cfg = dhp_benches::fixture::bench_config();
    let mut parse = 0.0;
    let r = measure::rate_timed(1, reps, |_| {
        let root = dhp_benches::fixture::fresh_root(&dir, "ingestprobe");
        let store = dhp_core::store::SqliteStore::open(&root)?;
        let t = std::time::Instant::now();
        let parsed = dhp_core::transport::log::read_log(&logp, &cfg)?;
        parse += t.elapsed().as_secs_f64();
        dhp_core::transport::log::ingest_lines(&store, &parsed, &cfg)?;
        let el = t.elapsed();
        drop(store);
        let _ = std::fs::remove_dir_all(&root);
        Ok(el)
    })
    .unwrap_or_else(|e| fail(e));
    println!(
        "{:.0} lines/s ({lines}-line log; read+parse {:.1} ms of {:.1} ms per ingest)",
        r * lines as f64,
        parse / reps as f64 * 1e3,
        1e3 / r
    );
    ingest_breakdown(&dir, &logp, &cfg);
    let _ = std::fs::remove_file(&logp);
}

/// Where an ingest's time goes: re-serialize + hash every state; bare SQL
/// insert of the rows.
fn ingest_breakdown(dir: &Path, logp: &Path, cfg: &dhp_core::Config) {
    let parsed = dhp_core::transport::log::read_log(logp, cfg).unwrap_or_else(|e| fail(e));
    let states: Vec<serde_json::Value> = parsed
        .iter()
        .filter_map(|l| match l {
            dhp_core::transport::log::Line::Record(v) if v["type"] == "checkpoint" => Some(v["state"].clone()),
            _ => None,
        })
        .collect();
    let t = std::time::Instant::now();
    let rows: Vec<(String, String)> =
        states.iter().map(|s| dhp_core::json::state_text_and_hash(s).unwrap_or_else(|e| fail(e))).collect();
    let hash_ms = t.elapsed().as_secs_f64() * 1e3;
    let root = dhp_benches::fixture::fresh_root(dir, "ingestsql");
    drop(dhp_core::store::SqliteStore::open(&root).unwrap_or_else(|e| fail(e)));
    let mut c = rusqlite::Connection::open(root.join("dhp.sqlite3")).unwrap_or_else(|e| fail(e));
    c.execute_batch("PRAGMA synchronous=FULL;").unwrap_or_else(|e| fail(e));
    let t = std::time::Instant::now();
    let tx = c.transaction().unwrap_or_else(|e| fail(e));
    {
        let mut st = tx
            .prepare(
                "INSERT OR IGNORE INTO checkpoints (hid, seq, state_json, state_hash, at) VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .unwrap_or_else(|e| fail(e));
        for (i, (text, hash)) in rows.iter().enumerate() {
            st.execute(rusqlite::params!["a".repeat(64), i as i64, text, hash, "2026-01-01T00:00:00.000000+00:00"])
                .unwrap_or_else(|e| fail(e));
        }
    }
    let t_ins = t.elapsed().as_secs_f64() * 1e3;
    tx.commit().unwrap_or_else(|e| fail(e));
    let t_all = t.elapsed().as_secs_f64() * 1e3;
    println!(
        "  breakdown: state_text_and_hash {hash_ms:.1} ms; bare SQL insert {t_ins:.1} ms + commit {:.1} ms",
        t_all - t_ins
    );
    drop(c);
    let _ = std::fs::remove_dir_all(&root);
}

/// `dhp-bench lock-race`: ad-hoc probe: the recover CAS in raw SQL, default vs 100 µs busy handler.
fn cmd_lock_race(a: &Args) {
    let dir = a.path("--dir");
    let races: usize = a.opt("--races").and_then(|v| v.parse().ok()).unwrap_or(50);
    for fine in [false, true] {
        let r = measure::lock_race_rate(&dir, 8, races, fine).unwrap_or_else(|e| fail(e));
        println!(
            "{r:.1} races/s, 8 racers, {}",
            if fine { "100 us busy handler" } else { "busy_timeout (SQLite ladder)" }
        );
    }
}

/// `dhp-bench dispatch`: ad-hoc probe (e.g. under perf/strace): N SDK dispatches on a fresh store;
/// with `--claim`, N claims of handoffs dispatched (in bulk) first.
fn cmd_dispatch(a: &Args) {
    let dir = a.path("--dir");
    let n: usize = a.opt("--n").and_then(|v| v.parse().ok()).unwrap_or(2000);
    let root = dhp_benches::fixture::fresh_root(&dir, "dispatchprobe");
    let r = dhp_core::Runner::open(&root, "w1", dhp_benches::fixture::bench_config()).unwrap_or_else(|e| fail(e));
    // The process's CPU time on the measured loop only (schedstat: ns).
    let cpu_ns = || {
        std::fs::read_to_string("/proc/self/schedstat")
            .ok()
            .and_then(|t| t.split_whitespace().next().and_then(|v| v.parse::<f64>().ok()))
            .unwrap_or(f64::NAN)
    };
    let (what, rate, cpu) = if a.flag("--claim") {
        let hids = dhp_benches::fixture::bulk_dispatch(&r, 0, n as u64).unwrap_or_else(|e| fail(e));
        let t0 = cpu_ns();
        let rate = measure::rate(1, n, |i| r.claim(&hids[i]).map(drop)).unwrap_or_else(|e| fail(e));
        ("claims", rate, cpu_ns() - t0)
    } else {
        let t0 = cpu_ns();
        let rate = measure::rate(1, n, |i| r.dispatch(&dhp_benches::fixture::sdk_envelope(i as u64)?).map(drop))
            .unwrap_or_else(|e| fail(e));
        ("dispatches", rate, cpu_ns() - t0)
    };
    println!("{rate:.1} {what}/s, {:.1} µs CPU each", cpu / 1e3 / n as f64);
    // `--pages M`: M more calls, and whose pages their commits wrote.
    if let Some(m) = a.opt("--pages").and_then(|v| v.parse::<usize>().ok()).filter(|m| *m > 0) {
        let (total, by) = if a.flag("--claim") {
            let hids = dhp_benches::fixture::bulk_dispatch(&r, n as u64, m as u64).unwrap_or_else(|e| fail(e));
            measure::wal_pages_by_btree(&root, m, |i| r.claim(&hids[i]).map(drop))
        } else {
            measure::wal_pages_by_btree(&root, m, |i| {
                r.dispatch(&dhp_benches::fixture::sdk_envelope((n + i) as u64)?).map(drop)
            })
        }
        .unwrap_or_else(|e| fail(e));
        println!("{total:.2} WAL frames per call over {m} calls; pages per call by b-tree:");
        for (name, k) in by {
            println!("  {k:6.2}  {name}");
        }
    }
    drop(r);
    let _ = std::fs::remove_dir_all(&root);
}

/// `dhp-bench machine`: the machine's description (JSON).
fn cmd_machine(a: &Args) {
    let dir = a.path("--dir");
    let out = a.path("--out");
    let mut m = measure::machine(&dir);
    m["loadavg_start"] = json!(measure::loadavg());
    write_json(&out, &m);
}

/// `dhp-bench report`: the Markdown report from both sides' results.
fn cmd_report(a: &Args) {
    let ours = read_json(&a.path("--ours"));
    let reference = read_json(&a.path("--ref"));
    let ours_rss = read_json(&a.path("--rss-ours"));
    let ref_rss = read_json(&a.path("--rss-ref"));
    let census = ours_rss.get("census").or_else(|| ref_rss.get("census")).cloned().unwrap_or(Value::Null);
    let mut rss = json!({"ours": ours_rss, "reference": ref_rss, "census": census});
    // The size-optimized deployment build (`--profile min-size`), when measured.
    if let Some(p) = a.opt("--rss-ours-min") {
        rss["ours_min_size"] = read_json(std::path::Path::new(&p));
    }
    let machine = read_json(&a.path("--machine"));
    let command = a.opt("--command").unwrap_or_else(|| "benches/compare.sh".into());
    print!("{}", report::markdown(&ours, &reference, &rss, &machine, &command));
}
