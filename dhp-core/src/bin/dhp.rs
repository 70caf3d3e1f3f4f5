//! `dhp`: the command line of dhp-core.
//!
//! Every path ends in one line on stderr (`dhp: <kind>: <message>`) and an
//! exit code: 0 ok, 2 usage, 3 validation/oversize, 4 unknown handoff,
//! 5 ownership (lost race, lost lease, stale fence), 6 state, 7 budget,
//! 8 tamper, 9 approval/capability, 10 transport, 11 store/config/io,
//! 1 anything else. With `--json`, stdout carries one JSON object.

use clap::{Parser, Subcommand, ValueEnum};
use dhp_core::envelope::{self, BuildOptions, Budget};
use dhp_core::history::History;
use dhp_core::supervisor::Supervisor;
use dhp_core::transport::{log, net, FileShipper, Shipper};
use dhp_core::worker::{self, Outcome, Start, WorkOptions};
use dhp_core::{census, json, Config, Error, Runner};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Parser)]
#[command(name = "dhp", version, about = "Durable Handoff Protocol (DHP 1.3) — store- and wire-compatible with dhp-protocol 1.3.0")]
struct Cli {
    /// Print one JSON object on stdout instead of text.
    #[arg(long, global = true)]
    json: bool,
    /// Log level for stderr diagnostics (error, warn, info, debug).
    #[arg(long, global = true, default_value = "warn", env = "DHP_LOG")]
    log: String,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a supervisor (same arguments as the reference's dhp-supervisor).
    Supervisor {
        root: PathBuf,
        id: String,
        /// How long to watch; SIGTERM/SIGINT finish the current scan and exit 0.
        seconds: f64,
        /// Record orphan/DLQ actions as history lines (chaos harness).
        #[arg(long)]
        history: Option<PathBuf>,
    },
    /// Create a handoff from flags, an envelope file, or the census shortcut.
    Dispatch(DispatchArgs),
    /// Show one handoff, or a line per handoff.
    Status { root: PathBuf, hid: Option<String> },
    /// Ingest transport logs (verified, idempotent; arrives pending).
    Ingest {
        root: PathBuf,
        #[arg(required = true)]
        logs: Vec<PathBuf>,
    },
    /// Suspend a running handoff into a portable bundle file.
    Suspend {
        root: PathBuf,
        hid: String,
        #[arg(long, short)]
        out: PathBuf,
    },
    /// Import a bundle: the handoff arrives pending with attempt+1.
    Resume { root: PathBuf, bundle: PathBuf },
    /// Acknowledge a completed handoff's result.
    Ack { root: PathBuf, hid: String },
    /// Approve or deny a pending approval request.
    Decide {
        root: PathBuf,
        approval_id: String,
        #[arg(value_enum)]
        decision: Decision,
    },
    /// Run the built-in prime-census worker on a handoff.
    Work(WorkArgs),
    /// Serve TCP checkpoint shipping: verified lines go to LOGDIR/HID.log
    /// (token from DHP_TRANSPORT_TOKEN; SIGTERM/SIGINT stop it gracefully).
    Transport {
        logdir: PathBuf,
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// 0 picks a free port (printed on the first line).
        #[arg(long, default_value_t = dhp_core::transport::net::DEFAULT_PORT)]
        port: u16,
        /// Drop a connection that takes longer than this (seconds) to send a
        /// frame or to read a reply.
        #[arg(long, default_value_t = 60.0)]
        idle_timeout: f64,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Decision {
    Approve,
    Deny,
}

#[derive(clap::Args)]
struct DispatchArgs {
    root: PathBuf,
    /// An envelope JSON file (verified: a tampered one is refused).
    #[arg(long, conflicts_with_all = ["kind", "census"])]
    envelope: Option<PathBuf>,
    /// Task kind.
    #[arg(long, requires = "schema")]
    kind: Option<String>,
    /// Inputs as a JSON object.
    #[arg(long, default_value = "{}")]
    inputs: String,
    /// Output schema as JSON.
    #[arg(long)]
    schema: Option<String>,
    /// Budget as JSON (merged over the defaults).
    #[arg(long)]
    budget: Option<String>,
    /// Capabilities as JSON, e.g. '{"network": ["api.example.com"]}'.
    #[arg(long)]
    capabilities: Option<String>,
    #[arg(long)]
    max_stall_retries: Option<i64>,
    #[arg(long, default_value = "dhp-rs")]
    created_by: String,
    /// SDK semantics: wrap inputs as {"inline": ...}, SDK budget defaults.
    #[arg(long)]
    sdk: bool,
    /// Prime census handoff: LO,HI,CHUNK (kind, inputs and schema filled in).
    #[arg(long, value_name = "LO,HI,CHUNK", conflicts_with = "kind")]
    census: Option<String>,
    /// Max attempts for --census handoffs.
    #[arg(long, default_value_t = 25)]
    max_attempts: i64,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum StartArg {
    Claim,
    Recover,
}

#[derive(clap::Args)]
struct WorkArgs {
    root: PathBuf,
    /// Worker id (the lease holder name); stable for the whole run.
    #[arg(long)]
    runner: String,
    #[arg(value_enum)]
    mode: StartArg,
    hid: String,
    /// Ship every checkpoint to this transport log file.
    #[arg(long)]
    ship: Option<PathBuf>,
    /// Sleep this many seconds after each chunk.
    #[arg(long, default_value_t = 0.0)]
    pace: f64,
    /// Append protocol operations (invoke/ok/fail) to this history file.
    #[arg(long)]
    history: Option<PathBuf>,
    /// Exit with code 3 after this many checkpoints, without completing.
    #[arg(long)]
    stop_after: Option<u64>,
    /// Do not publish a same-host liveness token (lease-only detection).
    #[arg(long)]
    no_liveness: bool,
    /// Heartbeat only after each chunk, not from a background thread.
    #[arg(long)]
    no_background_heartbeat: bool,
    /// Ship every checkpoint to a `dhp transport` server (or the
    /// reference's) at HOST:PORT; token from DHP_TRANSPORT_TOKEN.
    #[arg(long, value_name = "HOST:PORT", conflicts_with = "ship")]
    ship_to: Option<String>,
    /// sync: a checkpoint returns only once the peer acked it; async: ship
    /// in the background with at most --ship-max-lag lines unacked.
    #[arg(long, value_enum, default_value = "sync", requires = "ship_to")]
    ship_mode: ShipModeArg,
    /// Local buffer log for --ship-to (a directory, or a file ending not
    /// in '/'); default ROOT/ship-buffer/.
    #[arg(long, requires = "ship_to")]
    ship_buffer: Option<PathBuf>,
    /// Unacked lines allowed in async mode before a checkpoint waits.
    #[arg(long, default_value_t = 256, requires = "ship_to")]
    ship_max_lag: usize,
    /// Longest a checkpoint waits on the peer (seconds) before failing
    /// with a transport error.
    #[arg(long, default_value_t = 30.0, requires = "ship_to")]
    ship_timeout: f64,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum ShipModeArg {
    Sync,
    Async,
}

/// A failure with its exit code and kind.
struct Failure {
    code: i32,
    kind: String,
    message: String,
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure { code: e.exit_code(), kind: e.kind().to_string(), message: e.to_string() }
    }
}

fn usage(msg: impl Into<String>) -> Failure {
    Failure { code: 2, kind: "UsageError".into(), message: msg.into() }
}

fn parse_json_arg(what: &str, text: &str) -> Result<Value, Failure> {
    json::parse(text).map_err(|e| usage(format!("--{what}: {e}")))
}

fn read_file(path: &Path) -> Result<Vec<u8>, Failure> {
    std::fs::read(path).map_err(|e| Failure { code: 11, kind: "IoError".into(), message: format!("{}: {e}", path.display()) })
}

fn main() {
    let cli = Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_new(&cli.log).unwrap_or_else(|_| "warn".into());
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_target(false).init();
    let as_json = cli.json;
    match run(cli) {
        Ok((value, text)) => {
            if as_json {
                let mut v = value;
                if let Some(m) = v.as_object_mut() {
                    m.insert("ok".into(), json!(true));
                }
                println!("{v}");
            } else if !text.is_empty() {
                println!("{text}");
            }
            std::process::exit(if STOPPED.load(Ordering::SeqCst) { 3 } else { 0 });
        }
        Err(f) => {
            if as_json {
                println!("{}", json!({"ok": false, "error_kind": f.kind, "error": f.message}));
            }
            eprintln!("dhp: {}: {}", f.kind, f.message.replace('\n', " "));
            std::process::exit(f.code);
        }
    }
}

/// Set when a worker stopped at --stop-after: exit 3, not 0.
static STOPPED: AtomicBool = AtomicBool::new(false);

fn run(cli: Cli) -> Result<(Value, String), Failure> {
    let cfg = Config::from_env()?;
    match cli.cmd {
        Cmd::Supervisor { root, id, seconds, history } => supervisor(&root, &id, seconds, history, cfg),
        Cmd::Dispatch(a) => dispatch(a, cfg),
        Cmd::Status { root, hid } => status(&root, hid.as_deref(), cfg),
        Cmd::Ingest { root, logs } => {
            let r = Runner::open(&root, "dhp-ingest", cfg.clone())?;
            let mut reports = Vec::new();
            let mut lines = Vec::new();
            for l in &logs {
                let rep = log::ingest(r.store().as_ref(), l, &cfg)?;
                lines.push(format!(
                    "{}: {} ingested ({} new), {} skipped{}",
                    &rep.handoff_id[..12],
                    rep.checkpoints_ingested,
                    rep.checkpoints_new,
                    rep.lines_skipped,
                    if rep.created { ", created pending" } else { "" }
                ));
                reports.push(serde_json::to_value(&rep).unwrap_or(Value::Null));
            }
            Ok((json!({"reports": reports}), lines.join("\n")))
        }
        Cmd::Suspend { root, hid, out } => {
            let r = Runner::open(&root, "dhp-cli", cfg)?;
            // The bundle is on disk before the status change commits.
            let bytes = r.suspend_to(&hid, &out)?;
            Ok((json!({"hid": hid, "bytes": bytes, "out": out}), format!("suspended {} → {}", &hid[..12.min(hid.len())], out.display())))
        }
        Cmd::Resume { root, bundle } => {
            let r = Runner::open(&root, "dhp-cli", cfg)?;
            let hid = r.resume(&read_file(&bundle)?)?;
            Ok((json!({"hid": hid}), hid))
        }
        Cmd::Ack { root, hid } => {
            Runner::open(&root, "dhp-cli", cfg)?.ack(&hid)?;
            Ok((json!({"hid": hid, "acked": true}), "acked".into()))
        }
        Cmd::Decide { root, approval_id, decision } => {
            let approved = matches!(decision, Decision::Approve);
            let recorded = Runner::open(&root, "dhp-cli", cfg)?.decide_approval(&approval_id, approved)?;
            Ok((json!({"approval_id": approval_id, "recorded": recorded}), format!("recorded: {recorded}")))
        }
        Cmd::Work(a) => work(a, cfg),
        Cmd::Transport { logdir, host, port, idle_timeout } => transport_server(logdir, &host, port, idle_timeout, cfg),
    }
}

fn install_stop_flag() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        let _ = signal_hook::flag::register(sig, stop.clone());
    }
    stop
}

fn supervisor(root: &Path, id: &str, seconds: f64, history: Option<PathBuf>, cfg: Config) -> Result<(Value, String), Failure> {
    if !(seconds.is_finite() && seconds >= 0.0) {
        return Err(usage("SECONDS must be a non-negative number"));
    }
    let sup = Supervisor::open(root, id, cfg)?;
    let hist = match history {
        Some(p) => History::open(&p, id).map_err(|e| Error::Transport(format!("history {}: {e}", p.display())))?,
        None => History::disabled(),
    };
    let stop = install_stop_flag();
    let orphan_log = sup_root(root).join("ORPHANS3.log");
    let acts = sup.watch(Some(Duration::from_secs_f64(seconds)), &stop, |a| {
        hist.record("supervise", "ok", a.clone());
        if a["action"] == "orphaned" {
            if let Some(hid) = a["hid"].as_str() {
                let _ = log::append_line(&orphan_log, &format!("{id} orphaned {hid}"), &Config::default(), false);
            }
        }
    })?;
    let out = json!({"supervisor": id, "was_leader": sup.metrics.leadership_changes.load(Ordering::Relaxed) > 0,
                     "actions": acts, "metrics": sup.metrics.snapshot()});
    let text = serde_json::to_string_pretty(&out).unwrap_or_default();
    Ok((out, text))
}

fn sup_root(root: &Path) -> PathBuf {
    root.canonicalize().unwrap_or_else(|_| root.to_path_buf())
}

fn dispatch(a: DispatchArgs, cfg: Config) -> Result<(Value, String), Failure> {
    let r = Runner::open(&a.root, "dhp-cli", cfg)?;
    let env = if let Some(path) = &a.envelope {
        json::parse_bytes(&read_file(path)?)?
    } else if let Some(spec) = &a.census {
        let parts: Vec<u64> = spec.split(',').map(|p| p.trim().parse::<u64>()).collect::<Result<_, _>>()
            .map_err(|_| usage("--census wants LO,HI,CHUNK (non-negative integers)"))?;
        let [lo, hi, chunk] = parts[..] else { return Err(usage("--census wants LO,HI,CHUNK")) };
        if hi <= lo || chunk == 0 {
            return Err(usage("--census wants LO < HI and CHUNK > 0"));
        }
        let chunks = (hi - lo).div_ceil(chunk) as i64;
        let budget = Budget { max_steps: chunks + 100, max_spend_usd: 500.0, max_wallclock_s: 5400.0, max_attempts: a.max_attempts };
        envelope::build(census::KIND, census::inputs(lo, hi, chunk), census::output_schema(),
            BuildOptions { budget: Some(budget.to_value()), created_by: Some(a.created_by.clone()), ..Default::default() })?
    } else {
        let Some(kind) = &a.kind else { return Err(usage("give --envelope FILE, --census LO,HI,CHUNK, or --kind K --schema S")) };
        let inputs = parse_json_arg("inputs", &a.inputs)?;
        if !inputs.is_object() {
            return Err(Error::Validation("inputs must be a JSON object".into()).into());
        }
        let schema = parse_json_arg("schema", a.schema.as_deref().unwrap_or("{}"))?;
        let defaults = if a.sdk { Budget::SDK_DEFAULT } else { Budget::BUILD_DEFAULT };
        let mut budget = defaults.to_value();
        if let Some(b) = &a.budget {
            match parse_json_arg("budget", b)? {
                Value::Object(m) => budget.as_object_mut().expect("budget is an object").extend(m),
                _ => return Err(usage("--budget must be a JSON object")),
            }
        }
        let capabilities = a.capabilities.as_deref().map(|c| parse_json_arg("capabilities", c)).transpose()?;
        let inputs = if a.sdk { json!({"inline": inputs}) } else { inputs };
        envelope::build(kind, inputs, schema, BuildOptions {
            budget: Some(budget),
            capabilities,
            max_stall_retries: a.max_stall_retries,
            created_by: Some(a.created_by.clone()),
            ..Default::default()
        })?
    };
    let hid = r.dispatch(&env)?;
    Ok((json!({"hid": hid}), hid))
}

fn status(root: &Path, hid: Option<&str>, cfg: Config) -> Result<(Value, String), Failure> {
    let r = Runner::open(root, "dhp-cli", cfg)?;
    match hid {
        Some(h) => {
            let s = r.status(h)?;
            let text = serde_json::to_string_pretty(&s).unwrap_or_default();
            Ok((s, text))
        }
        None => {
            let mut rows = Vec::new();
            let mut lines = vec![format!("{:<14} {:<10} {:>7} {:>11} {}", "handoff", "status", "attempt", "checkpoints", "owner")];
            for h in r.all_hids()? {
                let s = r.status(&h)?;
                lines.push(format!(
                    "{:<14} {:<10} {:>7} {:>11} {}",
                    &h[..12],
                    s["status"].as_str().unwrap_or(""),
                    s["attempt"],
                    s["checkpoints"],
                    s["owner"].as_str().unwrap_or("-")
                ));
                rows.push(s);
            }
            Ok((json!({"handoffs": rows}), lines.join("\n")))
        }
    }
}

fn work(a: WorkArgs, cfg: Config) -> Result<(Value, String), Failure> {
    if !(a.pace.is_finite() && a.pace >= 0.0) {
        return Err(usage("--pace must be a non-negative number of seconds"));
    }
    let r = Runner::open(&a.root, &a.runner, cfg.clone())?;
    let history = match &a.history {
        Some(p) => History::open(p, &a.runner).map_err(|e| Error::Transport(format!("history {}: {e}", p.display())))?,
        None => History::disabled(),
    };
    let shipper: Option<Box<dyn Shipper>> = match &a.ship_to {
        Some(addr) => Some(Box::new(tcp_shipper(&a, addr, &cfg)?)),
        None => a.ship.as_ref().map(|p| Box::new(FileShipper { path: p.clone(), cfg: cfg.clone() }) as Box<dyn Shipper>),
    };
    let opts = WorkOptions {
        root: sup_root(&a.root),
        start: if a.mode == StartArg::Claim { Start::Claim } else { Start::Recover },
        hid: a.hid.clone(),
        shipper,
        pace: Duration::from_secs_f64(a.pace),
        history,
        stop_after: a.stop_after,
        liveness: !a.no_liveness,
        background_heartbeat: !a.no_background_heartbeat,
    };
    match worker::run_census(&r, opts)? {
        Outcome::Completed(v) => {
            let text = format!("completed {}: {} primes, sum {}", &a.hid[..12], v["prime_count"], v["prime_sum"]);
            Ok((v, text))
        }
        Outcome::Stopped(v) => {
            STOPPED.store(true, Ordering::SeqCst);
            let text = format!("stopped after {} checkpoints at next_n={}", v["checkpoints"], v["next_n"]);
            Ok((v, text))
        }
    }
}

// ---- TCP transport (server and --ship-to) ----

fn tcp_shipper(a: &WorkArgs, addr: &str, cfg: &Config) -> Result<net::TcpShipper, Failure> {
    if !(a.ship_timeout.is_finite() && a.ship_timeout > 0.0) {
        return Err(usage("--ship-timeout must be a positive number of seconds"));
    }
    let mode = match a.ship_mode {
        ShipModeArg::Sync => net::ShipMode::Sync,
        ShipModeArg::Async => net::ShipMode::Async { max_lag: a.ship_max_lag },
    };
    let buffer = match &a.ship_buffer {
        Some(p) if p.is_dir() || p.as_os_str().to_string_lossy().ends_with('/') => net::BufferLog::Dir(p.clone()),
        Some(p) => net::BufferLog::File(p.clone()),
        None => net::BufferLog::Dir(a.root.join("ship-buffer")),
    };
    let opts = net::ShipperOptions {
        buffer: Some(buffer),
        call_timeout: Duration::from_secs_f64(a.ship_timeout),
        cfg: cfg.clone(),
        ..net::ShipperOptions::from_env(mode)?
    };
    Ok(net::TcpShipper::new(addr, opts)?)
}

fn transport_server(logdir: PathBuf, host: &str, port: u16, idle_timeout: f64, cfg: Config) -> Result<(Value, String), Failure> {
    use std::io::Write;
    if !(idle_timeout.is_finite() && idle_timeout > 0.0) {
        return Err(usage("--idle-timeout must be a positive number of seconds"));
    }
    let token = std::env::var("DHP_TRANSPORT_TOKEN").unwrap_or_default();
    if token.is_empty() {
        tracing::warn!("DHP_TRANSPORT_TOKEN is not set: accepting any client");
    }
    std::fs::create_dir_all(&logdir).map_err(|e| Error::Transport(format!("log dir {}: {e}", logdir.display())))?;
    let shown = logdir.canonicalize().unwrap_or_else(|_| logdir.clone());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Transport(format!("cannot start the runtime: {e}")))?;
    let stats = rt.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let sig = |k| signal(k).map_err(|e| Error::Transport(format!("cannot watch signals: {e}")));
        let (mut term, mut int) = (sig(SignalKind::terminate())?, sig(SignalKind::interrupt())?);
        let listener = tokio::net::TcpListener::bind((host, port))
            .await
            .map_err(|e| Error::Transport(format!("cannot listen on {host}:{port}: {e}")))?;
        let local = listener.local_addr().map_err(|e| Error::Transport(format!("listener address: {e}")))?;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "dhp transport: listening on {local}, logs -> {}", shown.display());
        let _ = out.flush();
        drop(out);
        let server = net::ServerConfig { logdir, token, cfg, idle_timeout: Duration::from_secs_f64(idle_timeout) };
        net::run(listener, server, async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        })
        .await
    })?;
    let text = format!(
        "dhp transport: stopped ({} connections, {} checkpoints appended, {} duplicates, {} frames refused)",
        stats.connections, stats.checkpoints_appended, stats.checkpoints_duplicate, stats.frames_rejected
    );
    Ok((json!({"stats": stats}), text))
}
