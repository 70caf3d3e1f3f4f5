//! `dhp`: the command line of the Durable Handoff Protocol, built on the
//! dhp-core library (its MCP, A2A, dashboard, metrics and OTLP export too).
//!
//! Every failure ends in one line on stderr (`dhp: <Kind>: <message>`) and
//! an exit code: 0 ok, 2 usage, 3 validation/oversize, 4 unknown handoff or
//! approval, 5 ownership (lost race, lost lease, stale fence), 6 state, 7
//! budget, 8 tamper, 9 approval/capability, 10 transport, 11
//! store/config/io, 1 anything else. With `--json`, stdout carries one JSON
//! object. The full reference is `docs/cli.md`.

// No unwrap in the binary either: every failure is a typed `dhp:` line.
#![warn(clippy::unwrap_used)]

#[cfg(feature = "a2a")]
mod a2a;
#[cfg(any(feature = "a2a", feature = "dashboard"))]
mod allowed_host;
mod bound;
mod cmds;
#[cfg(feature = "dashboard")]
mod dashboard;
mod failure;
#[cfg(feature = "mcp")]
mod mcp;
mod metrics;
mod metrics_http;
mod observe;
mod out;
mod ride;
mod serve;
mod trace;
mod work;
mod work_cli;
mod worker;

use clap::{Parser, Subcommand, ValueEnum};
use dhp_core::store::{OpenMode, OpenedRoot};
use dhp_core::{Config, Runner};
use failure::Failure;
use serde_json::{json, Value};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Parser)]
#[command(
    name = "dhp",
    version,
    about = "Durable Handoff Protocol (DHP 1.3) — store- and wire-compatible with dhp-protocol 1.3.0"
)]
struct Cli {
    /// Print one JSON object on stdout instead of text.
    #[arg(long, global = true)]
    json: bool,
    /// Log level for stderr diagnostics [default: $DHP_LOG, else warn].
    #[arg(long, global = true, value_enum)]
    log: Option<LogLevel>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogLevel {
    Off,
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

impl LogLevel {
    /// `--log`, else `DHP_LOG` (unset or empty: warn), validated alike.
    fn resolve(flag: Option<LogLevel>) -> Result<LogLevel, Failure> {
        if let Some(l) = flag {
            return Ok(l);
        }
        match std::env::var("DHP_LOG") {
            Ok(v) if !v.trim().is_empty() => LogLevel::from_str(v.trim(), true).map_err(|_| {
                failure::usage(format!("DHP_LOG={v:?} is not a log level (off, error, warn, info, debug, trace)"))
            }),
            _ => Ok(LogLevel::Warn),
        }
    }

    fn directive(self) -> &'static str {
        match self {
            LogLevel::Off => "off",
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
            LogLevel::Trace => "trace",
        }
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a supervisor (same arguments as the reference's dhp-supervisor).
    Supervisor {
        /// Store directory (must hold a store).
        root: PathBuf,
        /// Supervisor id, unique among this store's supervisors.
        id: String,
        /// How long to watch, in seconds (0 to 31536000); SIGTERM/SIGINT
        /// finish the current scan and exit 0.
        seconds: f64,
        /// Record each action as a history line once it committed, and a
        /// `scan` line per finished pass (chaos harness, tests).
        #[arg(long)]
        history: Option<PathBuf>,
        #[command(flatten)]
        metrics: metrics_http::MetricsArgs,
    },
    /// Create a handoff from flags, an envelope file, or the census shortcut.
    Dispatch(cmds::DispatchArgs),
    /// Show one handoff, or a line per handoff.
    Status {
        /// Store directory (must hold a store).
        root: PathBuf,
        /// Handoff id (64 hex characters); omit to list every handoff.
        hid: Option<String>,
        /// List at most N handoffs (one page; the JSON's `next_after` is
        /// the `--after` of the next page, null on the last).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        limit: Option<u32>,
        /// List only handoffs whose id sorts after HID.
        #[arg(long, value_name = "HID")]
        after: Option<String>,
    },
    /// Ingest transport logs (verified, idempotent; arrives pending).
    Ingest {
        /// Store directory; see `--create`.
        root: PathBuf,
        /// Transport log files (one handoff each).
        #[arg(required = true)]
        logs: Vec<PathBuf>,
        /// Create ROOT and a new store if there is none.
        #[arg(long)]
        create: bool,
    },
    /// Suspend a running handoff into a portable bundle file.
    Suspend {
        /// Store directory (must hold a store).
        root: PathBuf,
        /// Handoff id (64 hex characters).
        hid: String,
        /// Bundle file to write.
        #[arg(long, short)]
        out: PathBuf,
    },
    /// Import a bundle: the handoff arrives pending with attempt+1.
    Resume {
        /// Store directory; see `--create`.
        root: PathBuf,
        /// Bundle file written by `dhp suspend` (or the reference).
        bundle: PathBuf,
        /// Create ROOT and a new store if there is none.
        #[arg(long)]
        create: bool,
    },
    /// Acknowledge a completed handoff's result.
    Ack {
        /// Store directory (must hold a store).
        root: PathBuf,
        /// Handoff id (64 hex characters).
        hid: String,
    },
    /// Approve or deny a pending approval request.
    Decide {
        /// Store directory (must hold a store).
        root: PathBuf,
        /// Id of a pending approval request.
        approval_id: String,
        /// The decision (final: a decided approval cannot be decided again).
        #[arg(value_enum)]
        decision: cmds::Decision,
    },
    /// Run the built-in prime-census worker on a handoff.
    Work(work::WorkArgs),
    /// Serve TCP checkpoint shipping: verified lines go to LOGDIR/HID.log
    /// (token from DHP_TRANSPORT_TOKEN; SIGTERM/SIGINT stop it gracefully).
    Transport(serve::TransportArgs),
    /// Serve the DHP tools to agents over MCP (Model Context Protocol) on stdio.
    #[cfg(feature = "mcp")]
    Mcp(mcp::McpArgs),
    /// Serve A2A (protocol 1.0, JSON-RPC over HTTP): each A2A task is a
    /// durable DHP handoff (docs/a2a.md).
    #[cfg(feature = "a2a")]
    A2a(a2a::A2aArgs),
    /// Serve a live, read-only web view of a store on loopback
    /// (docs/dashboard.md).
    #[cfg(feature = "dashboard")]
    Dashboard(dashboard::DashboardArgs),
}

/// Set when a worker stopped at --stop-after: exit 3, not 0.
static STOPPED: AtomicBool = AtomicBool::new(false);

/// What a successful command prints: the `--json` object and the text.
type Output = (Value, String);

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // A worker's command line is parsed without building every other
    // subcommand's arguments (see work_cli).
    let parsed = work_cli::parse(&args).map(Ok).unwrap_or_else(|| Cli::try_parse_from(&args));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => match failure::from_clap(&e) {
            Some(f) => f.exit(failure::wants_json(&args)),
            None => {
                let _ = e.print();
                std::process::exit(0);
            }
        },
    };
    let as_json = cli.json;
    let level = LogLevel::resolve(cli.log).unwrap_or_else(|f| f.exit(as_json));
    // Colour only on a terminal: logs redirected to files stay plain text.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(level.directive()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .init();
    // OpenTelemetry traces, when OTEL_EXPORTER_OTLP_ENDPOINT is set
    // (docs/observability.md); flushed before every exit below.
    if let Err(e) = trace::otlp::init_from_env(cli.cmd.name()) {
        Failure::from(e).exit(as_json);
    }
    // The library reads no argv: the role names our database connections.
    dhp_core::store::postgres::set_application_role(cli.cmd.name());
    let flush = || trace::otlp::shutdown(std::time::Duration::from_secs(5));
    match run(cli) {
        Ok((value, text)) => {
            let shown = if as_json {
                let mut v = value;
                if let Some(m) = v.as_object_mut() {
                    m.insert("ok".into(), json!(true));
                }
                out::stdout_line(&v.to_string())
            } else if !text.is_empty() {
                out::stdout_line(&text)
            } else {
                Ok(true)
            };
            flush();
            // A reader that closed the pipe leaves the exit code alone.
            if let Err(f) = shown {
                f.exit(false);
            }
            std::process::exit(if STOPPED.load(Ordering::SeqCst) { 3 } else { 0 });
        }
        Err(f) => {
            flush();
            f.exit(as_json)
        }
    }
}

impl Cmd {
    /// The subcommand's name (the `dhp.command` resource attribute).
    fn name(&self) -> &'static str {
        match self {
            Cmd::Supervisor { .. } => "supervisor",
            Cmd::Dispatch(_) => "dispatch",
            Cmd::Status { .. } => "status",
            Cmd::Ingest { .. } => "ingest",
            Cmd::Suspend { .. } => "suspend",
            Cmd::Resume { .. } => "resume",
            Cmd::Ack { .. } => "ack",
            Cmd::Decide { .. } => "decide",
            Cmd::Work(_) => "work",
            Cmd::Transport(_) => "transport",
            #[cfg(feature = "mcp")]
            Cmd::Mcp(_) => "mcp",
            #[cfg(feature = "a2a")]
            Cmd::A2a(_) => "a2a",
            #[cfg(feature = "dashboard")]
            Cmd::Dashboard(_) => "dashboard",
        }
    }
}

fn run(cli: Cli) -> Result<Output, Failure> {
    let mut cfg = Config::from_env()?;
    // Metrics and traces come from the library's event hooks.
    cfg.hooks = observe::hooks();
    match cli.cmd {
        Cmd::Supervisor { root, id, seconds, history, metrics } => {
            serve::supervisor(&root, &id, seconds, history, &metrics, cfg)
        }
        Cmd::Dispatch(a) => cmds::dispatch(a, cfg),
        Cmd::Status { root, hid, limit, after } => {
            cmds::status(&root, hid.as_deref(), cmds::Page { limit, after: after.as_deref() }, cfg)
        }
        Cmd::Ingest { root, logs, create } => cmds::ingest(&root, &logs, create_mode(create), cfg),
        Cmd::Suspend { root, hid, out } => cmds::suspend(&root, &hid, &out, cfg),
        Cmd::Resume { root, bundle, create } => cmds::resume(&root, &bundle, create_mode(create), cfg),
        Cmd::Ack { root, hid } => {
            open_runner(&root, OpenMode::Existing, "dhp-cli", cfg)?.0.ack(&hid)?;
            Ok((json!({"hid": hid, "acked": true}), "acked".into()))
        }
        Cmd::Decide { root, approval_id, decision } => cmds::decide(&root, &approval_id, decision, cfg),
        Cmd::Work(a) => work::work(a, cfg),
        Cmd::Transport(a) => serve::transport_server(a, cfg),
        #[cfg(feature = "mcp")]
        Cmd::Mcp(a) => mcp::run(a, cfg).map(|()| (json!({}), String::new())),
        #[cfg(feature = "a2a")]
        Cmd::A2a(a) => a2a::serve(a, cfg),
        #[cfg(feature = "dashboard")]
        Cmd::Dashboard(a) => dashboard::serve(a, cfg),
    }
}

/// The store-creating commands: `--create` may make ROOT; without it, a
/// store is created only in an existing empty directory.
fn create_mode(create: bool) -> OpenMode {
    if create {
        OpenMode::Create
    } else {
        OpenMode::CreateInEmptyDir
    }
}

/// Open ROOT as `mode` allows and bind a runner; also returns the store's
/// directory (`None` for a PostgreSQL ROOT).
fn open_runner(root: &Path, mode: OpenMode, id: &str, cfg: Config) -> Result<(Runner, Option<PathBuf>), Failure> {
    let OpenedRoot { backend, dir } = bound::open_watched(root, mode)?;
    Ok((Runner::new(backend, id, cfg)?, dir))
}
