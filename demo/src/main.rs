//! `cargo run -p demo` — the Wikipedia kill demo.
//!
//! Host A (a data directory, a page worker, a `dhp supervisor`) fetches
//! pages and ships every checkpoint over TCP, synchronously, to host B (a
//! data directory and a `dhp transport` server). After page `--kill-at` the
//! demo SIGKILLs the worker mid-fetch of the next page. Host A's supervisor
//! orphans the handoff; host B ingests the shipped log (it arrives pending),
//! a standby worker on host B claims it and resumes from the last
//! checkpoint, every page is fetched, a CSV dataset is written, and the demo
//! checks — against the mirror's own request counters — that no completed
//! page was fetched twice. See demo/README.md.

mod a2a;

use clap::{Parser, ValueEnum};
use demo::mirror::{self, Mirror, MirrorConfig};
use demo::netns::{self, Host, NetNs};
use demo::pageworker;
use demo::procs::{self, Proc};
use demo::record;
use demo::ui::{fmt_s, Ui};
use demo::verify::{check_records, describe_counts};
use demo::{fetch, titles};
use dhp_core::envelope::{self, now, Budget, BuildOptions};
use dhp_core::{Config, Runner};
use nix::sys::signal::Signal;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Source {
    /// A local HTTP server with the Wikipedia REST API's paths and JSON shape.
    Mirror,
    /// https://en.wikipedia.org (needs network).
    Wikipedia,
}

#[derive(Parser, Debug)]
#[command(
    name = "demo",
    about = "The DHP kill demo: kill -9 a page worker mid-fetch; a standby on another host resumes from the last shipped checkpoint"
)]
struct Args {
    /// Where pages come from.
    #[arg(long, value_enum, default_value = "mirror")]
    source: Source,
    /// Pages to fetch.
    #[arg(long, default_value_t = 60)]
    pages: usize,
    /// SIGKILL the worker after this many pages, mid-fetch of the next.
    #[arg(long, default_value_t = 20)]
    kill_at: usize,
    /// Seed for which titles are fetched (and the mirror's delays and
    /// content); random when not given, always printed.
    #[arg(long)]
    seed: Option<u64>,
    /// Keep all data in DIR (created; must be empty) instead of a temp dir.
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,
    /// Print one JSON summary on stdout (human output goes to stderr).
    #[arg(long)]
    json: bool,
    /// Put host A and host B in two network namespaces joined by a veth
    /// pair (root only).
    #[arg(long)]
    netns: bool,
    /// The dhp binary (default: next to this executable, built if missing).
    #[arg(long, value_name = "PATH")]
    dhp: Option<PathBuf>,
    /// The A2A bridge demo instead: an a2a-sdk client over HTTP, the worker
    /// SIGKILLed mid-task, a standby recovers (see src/a2a.rs).
    #[arg(long)]
    a2a: bool,
    /// Mirror response delay per page, milliseconds: MIN-MAX (seeded).
    #[arg(long, default_value = "20-120", value_name = "MIN-MAX")]
    mirror_delay_ms: String,
    /// Start host B's transport server this many seconds after worker A
    /// (it is down at the start; the synchronous shipper must wait it out).
    #[arg(long, default_value_t = 0.0, value_name = "SECONDS")]
    transport_down_s: f64,
    /// Longest any one phase may take, seconds.
    #[arg(long, default_value_t = 180.0)]
    phase_timeout_s: f64,
}

// ---------------------------------------------------------------------------
// output
// ---------------------------------------------------------------------------

// ---------------------------------------------------------------------------
// worker events
// ---------------------------------------------------------------------------

/// Forward a child's stdout lines (JSON events) to a channel; non-JSON
/// lines arrive as `{"event": "raw"}`. The channel closes at EOF.
fn pump_events(name: &str, stdout: std::process::ChildStdout) -> Receiver<Value> {
    let (tx, rx) = mpsc::channel();
    let name = name.to_string();
    std::thread::Builder::new()
        .name(format!("events-{name}"))
        .spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v = serde_json::from_str::<Value>(&line)
                    .ok()
                    .filter(Value::is_object)
                    .unwrap_or_else(|| json!({"event": "raw", "line": line}));
                if tx.send(v).is_err() {
                    break;
                }
            }
        })
        .expect("spawning an event reader");
    rx
}

/// Forward a child's stdout lines (text) to a channel and a file.
fn pump_lines(stdout: std::process::ChildStdout, copy: PathBuf) -> Receiver<String> {
    let (tx, rx): (Sender<String>, Receiver<String>) = mpsc::channel();
    std::thread::spawn(move || {
        let mut f = std::fs::File::create(&copy).ok();
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(f) = f.as_mut() {
                let _ = writeln!(f, "{line}");
            }
            let _ = tx.send(line);
        }
    });
    rx
}

fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

// ---------------------------------------------------------------------------
// the run
// ---------------------------------------------------------------------------

/// A failure before anything ran (bad options, missing prerequisites):
/// exit 2, nothing kept.
#[derive(Debug)]
struct Usage(String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// Longest `--phase-timeout-s` and `--transport-down-s`: one day.
const MAX_PHASE_TIMEOUT_S: f64 = 86_400.0;

macro_rules! usage {
    ($($t:tt)*) => { anyhow::Error::new(Usage(format!($($t)*))) };
}

// After `usage!`, which the phases use (macros are in scope textually).
mod phases;

/// Set by SIGINT/SIGTERM; every wait checks it, so the demo unwinds and
/// cleans up (children killed, namespaces deleted).
static INTERRUPTED: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(false)));

fn check_interrupt() -> anyhow::Result<()> {
    if INTERRUPTED.load(Ordering::SeqCst) {
        anyhow::bail!("interrupted");
    }
    Ok(())
}

/// Everything a run owns. Field order is drop order: processes first,
/// then the mirror, then the namespaces, then the temp dir.
struct Run {
    procs: Vec<Proc>,
    mirror: Option<Mirror>,
    netns: Option<NetNs>,
    tempdir: Option<tempfile::TempDir>,
}

impl Run {
    fn proc_mut(&mut self, name: &str) -> Option<&mut Proc> {
        self.procs.iter_mut().find(|p| p.name == name)
    }
}

struct Ctx {
    args: Args,
    seed: u64,
    ui: Ui,
    dir: PathBuf,
    host_a: PathBuf,
    host_b: PathBuf,
    dhp: PathBuf,
    worker_bin: PathBuf,
    cfg: Config,
    token: String,
    transport_lines: Option<Receiver<String>>,
    facts: Map<String, Value>,
    timings: Map<String, Value>,
    t0: f64,
    /// The phase in progress (the last one entered).
    phase: Option<phases::Phase>,
}

impl Ctx {
    fn prefix(&self, run: &Run, h: Host) -> Vec<String> {
        run.netns.as_ref().map(|n| n.exec_prefix(h)).unwrap_or_default()
    }

    fn enter(&mut self, phase: phases::Phase) {
        self.phase = Some(phase);
    }

    fn fact(&mut self, k: &str, v: Value) {
        self.facts.insert(k.to_string(), v);
    }

    fn timing(&mut self, k: &str, secs: f64) {
        self.timings.insert(k.to_string(), json!((secs * 1e6).round() / 1e6));
    }

    fn phase_timeout(&self) -> Duration {
        // Checked at start (`MAX_PHASE_TIMEOUT_S`); the fallback is never used.
        dhp_core::config::positive_duration("--phase-timeout-s", self.args.phase_timeout_s, MAX_PHASE_TIMEOUT_S)
            .unwrap_or(Duration::from_secs(60))
    }
}

fn parse_delay(s: &str) -> anyhow::Result<(u64, u64)> {
    let (a, b) = s.split_once('-').unwrap_or((s, s));
    let (a, b): (u64, u64) = (a.trim().parse()?, b.trim().parse()?);
    anyhow::ensure!(a <= b && b <= 60_000, "--mirror-delay-ms wants MIN-MAX with MIN <= MAX <= 60000");
    Ok((a, b))
}

fn main() {
    let args = Args::parse();
    if args.a2a {
        std::process::exit(a2a::main(args.dhp.as_deref(), args.json));
    }
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, INTERRUPTED.clone());
    }
    let json_out = args.json;
    let mut ui = Ui::new(json_out);
    let mut run = Run { procs: Vec::new(), mirror: None, netns: None, tempdir: None };
    let mut summary = Map::new();
    let outcome = demo_main(args, &mut run, &mut ui, &mut summary);
    // Stop whatever still runs before reporting (namespaces go last).
    for p in run.procs.iter_mut().rev() {
        p.stop(Duration::from_secs(3));
    }
    let code = match outcome {
        Ok(()) => {
            ui.finish_bar();
            ui.say(&ui.color("1;32", "KILL DEMO PASSED: every page delivered once, nothing lost to the kill"));
            0
        }
        Err(e) if e.downcast_ref::<Usage>().is_some() => {
            // A bad command line is not a verdict on the protocol: no
            // PASSED/FAILED, nothing kept, exit 2 like clap's own errors.
            ui.finish_bar();
            let msg = format!("{e:#}");
            eprintln!("demo: usage: {msg}");
            summary.insert("usage_error".into(), json!(msg));
            2
        }
        Err(e) => {
            ui.finish_bar();
            let msg = format!("{e:#}");
            // Keep the evidence of a failed run (not of a bad command line
            // or an interrupt).
            if let Some(t) = run.tempdir.take().filter(|_| msg != "interrupted") {
                let kept = t.keep();
                summary.insert("run_dir".into(), json!(kept));
                ui.say(&format!("(data kept for inspection in {})", kept.display()));
            }
            ui.say(&ui.color("1;31", &format!("KILL DEMO FAILED: {msg}")));
            summary.insert("failure".into(), json!(msg));
            if msg == "interrupted" {
                130
            } else {
                1
            }
        }
    };
    if json_out {
        if code != 2 {
            summary.insert("verdict".into(), json!(if code == 0 { "passed" } else { "failed" }));
        }
        summary.insert("ok".into(), json!(code == 0));
        println!("{}", Value::Object(summary));
    }
    drop(run);
    std::process::exit(code);
}

fn demo_main(args: Args, run: &mut Run, ui: &mut Ui, summary: &mut Map<String, Value>) -> anyhow::Result<()> {
    let t0 = now();
    let started = Instant::now();
    if args.pages < 2 {
        return Err(usage!("--pages must be at least 2"));
    }
    if !(args.kill_at >= 1 && args.kill_at < args.pages) {
        return Err(usage!("--kill-at must be between 1 and --pages - 1 ({})", args.pages - 1));
    }
    if !(args.transport_down_s.is_finite() && (0.0..=MAX_PHASE_TIMEOUT_S).contains(&args.transport_down_s)) {
        return Err(usage!("--transport-down-s must be in [0, {MAX_PHASE_TIMEOUT_S}]"));
    }
    dhp_core::config::positive_duration("--phase-timeout-s", args.phase_timeout_s, MAX_PHASE_TIMEOUT_S)
        .map_err(|e| usage!("{e}"))?;
    let (dmin, dmax) = parse_delay(&args.mirror_delay_ms).map_err(|e| usage!("--mirror-delay-ms: {e}"))?;
    if args.netns && args.source == Source::Wikipedia {
        return Err(usage!("--netns works with --source mirror only: the namespaces have no route to the internet"));
    }
    if args.netns {
        netns::preflight().map_err(|e| usage!("{e:#}"))?;
    }
    let seed = args.seed.unwrap_or_else(|| {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        (t.as_nanos() as u64 ^ u64::from(std::process::id()).rotate_left(32)) % 1_000_000
    });
    let titles = titles::pick(seed, args.pages).map_err(|e| usage!("{e:#}"))?;
    let cfg = Config::from_env()?;

    // ---- directories ----
    let dir = match &args.keep {
        Some(d) => {
            if d.exists() && d.read_dir()?.next().is_some() {
                return Err(usage!("--keep {}: directory is not empty (the demo starts from nothing)", d.display()));
            }
            std::fs::create_dir_all(d)?;
            d.canonicalize()?
        }
        None => {
            let t = tempfile::Builder::new().prefix("dhp-kill-demo-").tempdir()?;
            let p = t.path().to_path_buf();
            run.tempdir = Some(t);
            p
        }
    };
    let host_a = dir.join("host-a");
    let host_b = dir.join("host-b");
    std::fs::create_dir_all(&host_a)?;
    std::fs::create_dir_all(host_b.join("transport"))?;

    let token = std::env::var("DHP_TRANSPORT_TOKEN").ok().filter(|t| !t.is_empty()).unwrap_or_else(|| {
        dhp_core::json::sha256_hex(format!("{seed}:{}:{}", std::process::id(), now()).as_bytes())[..32].to_string()
    });
    let mut cx = Ctx {
        args,
        seed,
        ui: ui.clone(),
        dir: dir.clone(),
        host_a,
        host_b,
        dhp: PathBuf::new(),
        worker_bin: PathBuf::new(),
        cfg,
        token,
        transport_lines: None,
        facts: Map::new(),
        timings: Map::new(),
        t0,
        phase: None,
    };
    let res = phases::demo_run(&mut cx, run, titles, (dmin, dmax));
    let total = started.elapsed().as_secs_f64();
    cx.timing("total_s", total);
    *ui = cx.ui.clone();
    summary.insert("seed".into(), json!(cx.seed));
    summary.insert(
        "source".into(),
        json!(match cx.args.source {
            Source::Mirror => "mirror",
            Source::Wikipedia => "wikipedia",
        }),
    );
    summary.insert("pages".into(), json!(cx.args.pages));
    summary.insert("kill_at".into(), json!(cx.args.kill_at));
    summary.insert("netns".into(), json!(cx.args.netns));
    if cx.args.keep.is_some() {
        summary.insert("run_dir".into(), json!(cx.dir));
    }
    if let (Err(e), Some(p)) = (&res, cx.phase) {
        if e.downcast_ref::<Usage>().is_none() {
            summary.insert("failed_phase".into(), json!(p.name()));
        }
    }
    summary.extend(std::mem::take(&mut cx.facts));
    summary.insert("timings".into(), Value::Object(std::mem::take(&mut cx.timings)));
    res
}
