//! `dhp-chaos`: seeded SIGKILL/SIGSTOP fault injection against real DHP
//! worker and supervisor processes, with an invariant checker.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use dhp_chaos::check::{self, RoundReport};
use dhp_chaos::config::{
    default_fault_mix, parse_fault_mix, parse_nemesis, FaultKind, Impl, RoundConfig, Ship, Timing,
};
use dhp_chaos::round::db_faults;
use dhp_chaos::{locate, python, report, round, timeline};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// `--nemesis clock` without `--clock`: the share of processes skewed.
const NEMESIS_CLOCK_SHARE: f64 = 0.3;
/// `--nemesis disk` without `--disk`: the transport server's tmpfs size.
const NEMESIS_DISK: &str = "1m";
/// `--nemesis disk` without `--store-disk`: the SQLite store's tmpfs size.
const NEMESIS_STORE_DISK: &str = "16m";

const ABOUT: &str =
    "Seeded fault injection against real DHP worker and supervisor processes, with an invariant checker.";

const LONG_ABOUT: &str = "\
Seeded fault injection against real DHP worker and supervisor processes, with an invariant checker.

Each round dispatches M prime-census handoffs, starts real worker processes and at least two \
supervisor processes, and lets a seeded injector SIGKILL workers, the leader supervisor, followers \
and several processes at once, SIGSTOP workers (SIGCONT after they were replaced: a woken zombie \
must be fenced), and arm failpoints that kill a worker inside the protocol. A provisioner starts \
recovery workers for orphans and replacement supervisors. Afterwards the checker verifies, from the \
store, the transport logs and the recorded history: each handoff completed exactly once with the \
recomputed result or parked in the DLQ with checkpoints intact; seqs continuous; fences never go \
backwards along commit order and no two holders' writes interleave; the transport log agrees with \
the store; nothing is stuck; work redone per fault is at most one chunk; and it reports kill → \
orphan detection latency (p50/p99).

REPLAY: a seed replays the fault SCHEDULE (the kind and time of every fault exactly; the victim by \
position among the processes eligible at that moment; failpoints, racing recoverers, delays), NOT \
the OS interleaving — process start-up, scheduling and I/O timing differ between runs, so the same \
seed can take a different path. The recorded history (history.jsonl in the round \
directory) is the ground truth of what happened; `dhp-chaos analyze DIR` re-checks a saved run \
from its files.

Round i of seed S uses seed S+i, so `--seed S+i --rounds 1` replays that round's schedule; a \
failing round prints this exact command.

Exit status: 0 every invariant held (or was not exercised), 1 a violation, 2 harness error, 3 an \
invariant UNCHECKED (a source it needs was missing, or it checked nothing where the harness saw events) \
and not named by --allow-unchecked.";

#[derive(Parser)]
#[command(name = "dhp-chaos", version, about = ABOUT, long_about = LONG_ABOUT, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand)]
enum Cmd {
    /// Re-check a saved run (a run directory with round-* subdirectories, or one round directory).
    Analyze {
        dir: PathBuf,
        /// Rewrite timeline.svg as well.
        #[arg(long)]
        timeline: bool,
    },
}

#[derive(clap::Args)]
struct RunArgs {
    /// Number of rounds (round i uses seed S+i); at least 1.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
    /// Seed of the fault schedule; drawn and printed when absent. Replays the schedule, not the OS interleaving.
    #[arg(long)]
    seed: Option<u64>,
    /// Run directory (default: $TMPDIR/dhp-chaos/seed-S-<time>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Handoffs per round (M).
    #[arg(long, default_value_t = 4)]
    handoffs: u32,
    /// Chunks per handoff.
    #[arg(long, default_value_t = 300)]
    chunks: u64,
    /// Numbers per chunk.
    #[arg(long, default_value_t = 100)]
    chunk: u64,
    /// First handoff's lo (the reference's harness uses 5,000,000).
    #[arg(long, default_value_t = 5_000_000)]
    base: u64,
    /// Worker sleep after each chunk, seconds.
    #[arg(long, default_value_t = 0.03)]
    pace: f64,
    /// max_attempts of ordinary handoffs.
    #[arg(long, default_value_t = 1000)]
    max_attempts: i64,
    /// Handoffs per round dispatched with --dlq-max-attempts (exercise the DLQ path).
    #[arg(long, default_value_t = 1)]
    dlq_handoffs: u32,
    #[arg(long, default_value_t = 4)]
    dlq_max_attempts: i64,
    /// Workers: builtin (dhp work), python (reference work_driver4.py), mixed (seeded per spawn), or a command
    /// taking `ROOT --runner ID claim|recover HID --ship LOG --pace S --history FILE`.
    #[arg(long, default_value = "builtin")]
    workers: String,
    /// Supervisors: builtin (dhp supervisor), python (reference supervisor3_watch.py), or a command taking
    /// `ROOT ID SECONDS --history FILE`.
    #[arg(long, default_value = "builtin")]
    supervisors: String,
    /// Supervisor processes kept alive (at least 2).
    #[arg(long, default_value_t = 2)]
    supervisor_count: u32,
    /// Seconds between faults, MIN,MAX (default 0.15,0.55; 0.6,1.6 when python processes take part).
    #[arg(long)]
    fault_interval: Option<String>,
    /// Fault mix, e.g. kill-worker=50,kill-leader=10,kill-follower=8,kill-multi=14,pause=12.
    #[arg(long)]
    faults: Option<String>,
    /// Probability that a builtin worker starts with a failpoint armed.
    #[arg(long, default_value_t = 0.2)]
    failpoint_rate: f64,
    /// Probability that an orphan gets 2–3 racing recoverers.
    #[arg(long, default_value_t = 0.15)]
    race_rate: f64,
    /// Longest SIGSTOP, seconds.
    #[arg(long, default_value_t = 2.0)]
    pause_max: f64,
    /// Replacement supervisors start within this many seconds.
    #[arg(long, default_value_t = 0.3)]
    supervisor_restart_max: f64,
    /// Longest fault phase per round, seconds.
    #[arg(long, default_value_t = 90.0)]
    fault_seconds: f64,
    /// Start the fault schedule once this many checkpoints are committed (its times and
    /// --fault-seconds count from then): a fault then always finds work under way, however
    /// slowly a loaded machine starts the workers. 0 (default): at the round's start.
    #[arg(long, default_value_t = 0)]
    faults_after_checkpoints: u64,
    /// After faults stop, seconds to wait for every handoff to end.
    #[arg(long, default_value_t = 30.0)]
    grace: f64,
    /// DHP_LEASE_INTERVAL_S for every process.
    #[arg(long, default_value_t = 0.2)]
    lease_interval: f64,
    /// DHP_LEASE_MAX_MISSED.
    #[arg(long, default_value_t = 3)]
    lease_max_missed: i64,
    /// DHP_SUPERVISOR_SCAN_S.
    #[arg(long, default_value_t = 0.1)]
    scan: f64,
    /// DHP_LEADER_TTL_S.
    #[arg(long, default_value_t = 0.6)]
    leader_ttl: f64,
    /// How workers ship checkpoints: file (--ship LOG), tcp (--ship-to a `dhp transport` server that is
    /// itself SIGKILLed and restarted), or tcp-async. TCP needs builtin workers.
    #[arg(long, default_value = "file")]
    ship: String,
    /// --ship tcp-async: unacknowledged lines a worker may run ahead of the peer (`dhp work --ship-max-lag`),
    /// checked by the async-lag invariant.
    #[arg(long, default_value_t = 4)]
    ship_max_lag: u64,
    /// Clock faults: this share (0–1) of worker and supervisor spawns run with libfaketime preloaded, their
    /// clock off by a seeded offset and running at a seeded rate (needs the Debian package faketime).
    #[arg(long, default_value_t = 0.0)]
    clock: f64,
    /// Clock faults: offsets uniform in ±this many seconds.
    #[arg(long, default_value_t = 2.0)]
    clock_offset: f64,
    /// Clock faults: rates log-uniform in [1/this, this].
    #[arg(long, default_value_t = 1.25)]
    clock_rate: f64,
    /// Disk faults (--ship tcp, root): mount a tmpfs of SIZE (e.g. 256k) as the transport server's log directory;
    /// the disk-full fault fills it until ENOSPC. Unmounted at the end of each round, its logs kept.
    #[arg(long, value_name = "SIZE")]
    disk: Option<String>,
    /// Store disk faults (SQLite store, root): mount a tmpfs of SIZE (e.g. 16m) as the round's store directory;
    /// the store-full fault fills it until ENOSPC. Unmounted at the end of each round, the store kept.
    #[arg(long, value_name = "SIZE")]
    store_disk: Option<String>,
    /// I/O error injection: not simulated (this harness needs a device-mapper error target, which these
    /// machines' kernels lack); refused with the reason.
    #[arg(long)]
    io_errors: bool,
    /// The transport server command for --ship tcp (default `dhp transport`); `LOGDIR --port P` is appended
    /// and it must print `listening on HOST:PORT` (for mutant servers in tests).
    #[arg(long)]
    transport: Option<String>,
    /// Pause points for python workers: the shim SIGSTOPs the worker between the reference's ownership check
    /// and its write, e.g. checkpoint.after_check=0.02,complete.after_check=0.3 (probability per pass).
    #[arg(long, default_value = "")]
    pause_points: String,
    /// Builtin workers publish no liveness token (lease-only detection, like the reference).
    #[arg(long)]
    no_liveness: bool,
    /// on: workers and supervisors get the round's history file (detail for the checker); off: they get
    /// /dev/null and only the harness's own records count (see CONTRACT.md).
    #[arg(long, default_value = "on", value_parser = ["on", "off"])]
    impl_history: String,
    /// Invariants that may end UNCHECKED without the exit code 3 (comma-separated names, or `all`).
    #[arg(long, value_delimiter = ',', value_name = "NAME,...")]
    allow_unchecked: Vec<String>,
    /// Do not install the store audit (triggers + dhpchaos_audit table): the audit-based checks are then UNCHECKED.
    #[arg(long)]
    no_audit: bool,
    /// The dhp binary (default: next to this executable, rebuilt first under cargo).
    #[arg(long)]
    dhp: Option<PathBuf>,
    /// Python interpreter for python workers/supervisors (default $DHP_PYTHON or <repo>/.venv/bin/python).
    #[arg(long)]
    python: Option<PathBuf>,
    /// Run rounds until --budget-minutes is spent; stop at the first violation and keep its artifacts.
    #[arg(long)]
    nightly: bool,
    #[arg(long, default_value_t = 30.0)]
    budget_minutes: f64,
    /// Exit 0 (and, with --nightly, keep going) when every violation is a documented weakness of the
    /// Python reference (torn claim/recover, check-then-write, no catch-up of the peer log); they are still reported and saved.
    #[arg(long)]
    allow_known_reference_bugs: bool,
    /// In --nightly mode, keep the store, logs and process logs of passing rounds too.
    #[arg(long)]
    keep_passing: bool,
    /// No progress display.
    #[arg(long, short)]
    quiet: bool,
    /// The store: sqlite (default), postgres (a throwaway cluster this run starts and stops, via
    /// scripts/pg.sh) or a postgres:// URL of an existing server (each round gets its own schema).
    /// Given twice (sqlite and postgres), runs the same seeds on both engines and prints them side by side.
    #[arg(long, default_value = "sqlite")]
    store: Vec<String>,
    /// Simulated hosts (at least 2; needs root): each a network namespace with its own address, store,
    /// supervisors, workers and transport server; host K ships to host K+1 over TCP (implies --ship tcp).
    #[arg(long)]
    hosts: Option<u32>,
    /// The fault mix by family: kill,pause,failpoint,partition,link,host,clock,disk,db-link (partition and host
    /// need --hosts; link needs --ship tcp or --hosts; db-link a PostgreSQL store; clock without --clock skews 30% of
    /// processes; disk without --disk puts the transport server's logs on a 1m tmpfs and, with SQLite, the store on a
    /// 16m one via --store-disk). Sets --faults (default weights) and
    /// --failpoint-rate (0 unless failpoint is named); not with --faults.
    #[arg(long, conflicts_with = "faults")]
    nemesis: Option<String>,
    /// Not simulated: refused with the reason (see README, "Hosts and partitions").
    #[arg(long)]
    lose_unsynced: bool,
    /// With --store postgres://…: the server's cluster directory (the DIR `scripts/pg.sh start`
    /// prints), which allows the database faults (db-crash, db-terminate-backend, db-stall);
    /// without it they are refused. --store postgres owns its cluster and needs none.
    #[arg(long, value_name = "DIR")]
    pg_data: Option<PathBuf>,
    /// A named scenario instead of the seeded fault mix: net-chaos (a worker per round SIGKILLed mid-ship,
    /// a standby finishes; then how many checkpoints landed on the peer, and the rework). See README.
    #[arg(long)]
    scenario: Option<String>,
    /// --scenario net-chaos: rounds, one handoff and one kill each.
    #[arg(long, default_value_t = 4)]
    net_rounds: u32,
    /// --scenario net-chaos: checkpoints (census chunks) per round.
    #[arg(long, default_value_t = 6)]
    net_checkpoints: u64,
}

fn main() {
    let cli = Cli::parse();
    let code = match cli.cmd {
        Some(Cmd::Analyze { dir, timeline }) => analyze(&dir, timeline),
        None => run(cli.run),
    };
    std::process::exit(match code {
        Ok(c) => c,
        Err(e) => {
            eprintln!("dhp-chaos: harness error: {e:#}");
            2
        }
    });
}

/// The round directories of a run directory (or the one round given):
/// full ones, and those a nightly pruned after they passed.
fn round_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    if check::is_round_dir(dir) || check::is_pruned_round_dir(dir) {
        return Ok(vec![dir.to_path_buf()]);
    }
    if let Some(hosts) = dhp_chaos::hosts::host_dirs(dir) {
        return Ok(hosts);
    }
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .flat_map(|p| dhp_chaos::hosts::host_dirs(&p).unwrap_or_else(|| vec![p]))
        .filter(|p| check::is_round_dir(p) || check::is_pruned_round_dir(p))
        .collect();
    v.sort();
    if v.is_empty() {
        bail!(
            "{} holds no round directories (round.json with history.jsonl, or with round-report.json if pruned)",
            dir.display()
        );
    }
    Ok(v)
}

fn analyze(dir: &Path, with_timeline: bool) -> Result<i32> {
    let mut reports = Vec::new();
    let mut pruned = Vec::new();
    let mut net_chaos = Vec::new();
    for d in round_dirs(dir)? {
        if !check::is_round_dir(&d) {
            // a passing nightly round keeps only its reports: its verdict
            // cannot be re-checked, so it is taken as saved, and said so
            reports.push(check::load_saved_report(&d)?);
            pruned.push(d.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
            continue;
        }
        let r = check::check_round(&d).with_context(|| format!("checking {}", d.display()))?;
        if let Some(nc) = dhp_chaos::scenario::reanalyze(&d)? {
            net_chaos.push(nc);
        }
        if with_timeline {
            timeline::write(&d)?;
            // a host of a multi-host round: its round's timeline too
            if let Some(round) = d.parent().filter(|r| r.join(dhp_chaos::hosts::HOSTS_JSON).exists()) {
                if let Some(n) = dhp_chaos::hosts::host_dirs(round).map(|v| v.len() as u32) {
                    dhp_chaos::hosts::timeline::write(round, n)?;
                }
            }
        }
        reports.push(r);
    }
    let t = report::totals(&reports);
    print!("{}", report::summary(&reports, &t, true));
    if !pruned.is_empty() {
        println!(
            "\n{} round(s) pruned after passing (no history or store kept), shown from their saved round-report.json, not re-checked: {}",
            pruned.len(),
            pruned.join(", ")
        );
    }
    for (_, text) in &net_chaos {
        print!("{text}");
    }
    Ok(if !(reports.iter().all(|r| r.held) && net_chaos.iter().all(|n| n.0)) {
        1
    } else if reports.iter().any(|r| !r.unchecked.is_empty()) {
        3
    } else {
        0
    })
}

/// The command line minus run-level flags, for the replay command.
fn replay_args() -> Vec<String> {
    replay_args_of(std::env::args().skip(1))
}

fn replay_args_of(mut args: impl Iterator<Item = String>) -> Vec<String> {
    let drop_with_value = ["--seed", "--rounds", "--budget-minutes", "--out"];
    let drop_flag = ["--nightly", "--keep-passing", "--quiet", "-q", "--allow-known-reference-bugs"];
    let mut out = Vec::new();
    while let Some(a) = args.next() {
        if drop_with_value.contains(&a.as_str()) {
            args.next();
            continue;
        }
        if drop_with_value.iter().any(|d| a.starts_with(&format!("{d}="))) || drop_flag.contains(&a.as_str()) {
            continue;
        }
        // A store URL's password is not printed (write it back in to replay).
        let a = if a.contains("://") { dhp_core::store::location::redact(&a) } else { a };
        out.push(if a.contains(' ') { format!("'{a}'") } else { a });
    }
    out
}

fn replay_command(seed: u64) -> String {
    let release = std::env::current_exe().ok().is_some_and(|e| e.components().any(|c| c.as_os_str() == "release"));
    let mut s =
        format!("cargo run{} -p dhp-chaos -- --seed {seed} --rounds 1", if release { " --release" } else { "" });
    for a in replay_args() {
        s.push(' ');
        s.push_str(&a);
    }
    s
}

fn parse_interval(s: &str) -> Result<(f64, f64)> {
    let (a, b) = s.split_once(',').context("--fault-interval wants MIN,MAX")?;
    let (a, b): (f64, f64) = (a.trim().parse()?, b.trim().parse()?);
    if !(a > 0.0 && b >= a) {
        bail!("--fault-interval wants 0 < MIN <= MAX");
    }
    Ok((a, b))
}

fn run(a: RunArgs) -> Result<i32> {
    let workers = Impl::parse(&a.workers, "workers")?;
    let supervisors = Impl::parse(&a.supervisors, "supervisors")?;
    if a.supervisor_count < 2 {
        bail!("--supervisor-count must be at least 2");
    }
    if a.handoffs == 0 || a.chunks == 0 || a.chunk == 0 {
        bail!("--handoffs, --chunks and --chunk must be positive");
    }
    if a.lose_unsynced {
        bail!(
            "--lose-unsynced is not simulated: losing what was written but not fsynced needs a device that can drop unsynced writes on demand (dm-flakey, dm-log-writes), which this harness does not have; a host death kills processes and the kernel keeps their writes"
        );
    }
    let scenario = a.scenario.as_deref().map(dhp_chaos::scenario::Scenario::parse).transpose()?;
    let net_chaos = dhp_chaos::scenario::Options {
        rounds: a.net_rounds,
        checkpoints: a.net_checkpoints,
        quiet: a.quiet,
        allow_known_reference_bugs: a.allow_known_reference_bugs,
    };
    if scenario.is_some() {
        dhp_chaos::scenario::net_chaos::validate(&net_chaos, a.chunk, a.base, a.pace, &workers)?;
        let many = a.rounds != 1 || a.nightly || a.hosts.is_some() || a.store.iter().any(|s| s != "sqlite");
        if many || a.faults.is_some() || a.nemesis.is_some() || a.disk.is_some() || a.clock > 0.0 || a.ship != "file" {
            bail!("--scenario net-chaos runs its own fault script on one SQLite store with TCP shipping: not with --rounds, --nightly, --hosts, --store postgres, --faults, --nemesis, --disk, --clock or --ship (its rounds: --net-rounds)");
        }
    }
    let mut ship = Ship::parse(&a.ship)?;
    if let Some(n) = a.hosts {
        if n < 2 {
            bail!("--hosts needs at least 2 hosts (each ships to the next)");
        }
        if a.store.iter().any(|s| s != "sqlite") {
            bail!("--hosts runs a SQLite store per host; --store postgres is not supported with --hosts");
        }
        if ship == Ship::File {
            ship = Ship::Tcp; // hosts ship to each other over TCP
        }
        dhp_chaos::hosts::net::check_support()?;
    }
    if ship.is_tcp() && workers.uses_python() {
        bail!(
            "--ship {} need builtin workers or a command taking `dhp work`'s --ship-to flags (the reference's work_driver4.py ships to a file only)",
            if a.hosts.is_some() { "tcp (--hosts)" } else { a.ship.as_str() }
        );
    }
    if a.ship_max_lag == 0 {
        bail!("--ship-max-lag must be at least 1");
    }
    let nemesis = a.nemesis.as_deref().map(|n| parse_nemesis(n, ship.is_tcp())).transpose()?;
    // `--nemesis clock` / `disk` without their own flags: documented defaults
    let clock_share = match &nemesis {
        Some(n) if n.clock && a.clock == 0.0 => NEMESIS_CLOCK_SHARE,
        _ => a.clock,
    };
    let disk = match &nemesis {
        Some(n) if n.disk && a.disk.is_none() => Some(NEMESIS_DISK.to_string()),
        _ => a.disk.clone(),
    };
    let clock_ok = (0.0..=1.0).contains(&clock_share)
        && (0.0..=1e6).contains(&a.clock_offset)
        && (1.0..=100.0).contains(&a.clock_rate);
    if !clock_ok {
        bail!("--clock wants a share in 0..1, --clock-offset seconds in 0..1e6, --clock-rate in 1..100");
    }
    let disk_bytes = disk.as_deref().map(dhp_chaos::round::parse_size).transpose()?;
    let sqlite_only = a.store.iter().all(|s| s == "sqlite");
    let store_disk = match &nemesis {
        Some(n) if n.disk && a.store_disk.is_none() && sqlite_only => Some(NEMESIS_STORE_DISK.to_string()),
        _ => a.store_disk.clone(),
    };
    let store_disk_bytes = dhp_chaos::round::store_disk_checked(store_disk.as_deref(), sqlite_only, a.io_errors)?;
    if disk_bytes.is_some() && !ship.is_tcp() {
        bail!("--disk puts the transport server's logs on a small disk: it needs --ship tcp or tcp-async");
    }
    if disk_bytes.is_some() && !nix::unistd::geteuid().is_root() {
        bail!("--disk mounts a tmpfs and needs root; refusing to run disk faults without it (other faults run without --disk)");
    }
    if clock_share > 0.0 {
        dhp_chaos::clock::libfaketime()?;
    }
    let transport = a.transport.as_deref().map(|t| t.split_whitespace().map(String::from).collect::<Vec<_>>());
    if transport.as_ref().is_some_and(|t| t.is_empty() || !(ship.is_tcp() || scenario.is_some())) {
        bail!("--transport needs a command and --ship tcp or tcp-async");
    }
    // `--scenario net-chaos --transport python`: the reference's TransportServer is the peer
    let py_peer = scenario.is_some() && transport.as_deref().is_some_and(|t| t == ["python"]);
    let uses_py = workers.uses_python() || supervisors.uses_python() || py_peer;
    let (python, reference_dir) = if uses_py {
        let py = python::interpreter(a.python.as_deref())?;
        let (dir, version) = python::reference_dir(&py)?;
        if version != "1.3.0" {
            eprintln!("dhp-chaos: warning: reference package is dhp-protocol {version}, expected 1.3.0");
        }
        (Some(py), Some(dir))
    } else {
        (None, None)
    };
    let dhp = locate::dhp_binary(a.dhp.as_deref())?;
    let seed = a.seed.unwrap_or_else(rand::random::<u64>);
    let fault_interval = match &a.fault_interval {
        Some(s) => parse_interval(s)?,
        None if uses_py => (0.6, 1.6),
        None => (0.15, 0.55),
    };
    let mut failpoint_rate = a.failpoint_rate;
    let fault_mix = match (&nemesis, &a.faults) {
        (Some(n), _) => {
            if !n.failpoints {
                failpoint_rate = 0.0;
            }
            // a PostgreSQL store has no store directory to fill
            n.mix.iter().copied().filter(|(k, _)| sqlite_only || *k != FaultKind::StoreFull).collect()
        }
        (None, Some(s)) => parse_fault_mix(s)?,
        (None, None) if ship.is_tcp() => {
            let mut m = default_fault_mix();
            m.push((FaultKind::KillTransport, 6.0));
            if a.hosts.is_some() {
                m.push((FaultKind::Partition, 8.0));
            }
            m
        }
        (None, None) => default_fault_mix(),
    };
    if a.hosts.is_none()
        && fault_mix.iter().any(|(k, w)| matches!(k, FaultKind::Partition | FaultKind::HostDeath) && *w > 0.0)
    {
        bail!("partitions and host death need --hosts N (there is no network and no second host in a one-host round)");
    }
    if disk_bytes.is_none() && fault_mix.iter().any(|(k, w)| *k == FaultKind::DiskFull && *w > 0.0) {
        bail!("disk-full faults fill the transport server's disk: they need --disk SIZE (and --ship tcp)");
    }
    if store_disk_bytes.is_none() && fault_mix.iter().any(|(k, w)| *k == FaultKind::StoreFull && *w > 0.0) {
        bail!("store-full faults fill the SQLite store's disk: they need --store-disk SIZE (root)");
    }
    let links = fault_mix.iter().any(|(k, w)| *k == FaultKind::Link && *w > 0.0);
    if !ship.is_tcp() && links {
        bail!("link faults act on the TCP link to the transport server: they need --ship tcp or tcp-async");
    }
    let timing = Timing {
        lease_interval_s: a.lease_interval,
        lease_max_missed: a.lease_max_missed,
        supervisor_scan_s: a.scan,
        leader_ttl_s: a.leader_ttl,
    };
    if timing.leader_ttl_s <= timing.supervisor_scan_s || timing.leader_ttl_s.is_nan() {
        bail!("--leader-ttl must exceed --scan");
    }
    let started_at = chrono::Utc::now();
    let out = match &a.out {
        Some(o) => o.clone(),
        None => {
            std::env::temp_dir().join("dhp-chaos").join(format!("seed-{seed}-{}", started_at.format("%Y%m%dT%H%M%S")))
        }
    };
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    println!("dhp-chaos: seed {seed} (replays the fault schedule, not the OS interleaving; history.jsonl is the ground truth)");
    println!("dhp-chaos: run directory {}", out.display());
    if scenario.is_none() {
        println!(
        "dhp-chaos: workers {}, supervisors {} ×{}, shipping {}, {} handoffs × {} chunks, faults every {:.2}–{:.2}s, lease {}s×{}, dhp {}",
        workers.label(),
        supervisors.label(),
        a.supervisor_count,
        match (a.hosts, ship) {
            (Some(n), Ship::TcpAsync) => format!("tcp-async between {n} hosts"),
            (Some(n), _) => format!("tcp between {n} hosts"),
            _ => a.ship.clone(),
        },
        a.handoffs,
        a.chunks,
        fault_interval.0,
        fault_interval.1,
        timing.lease_interval_s,
        timing.lease_max_missed,
        dhp.display()
        );
    }
    // At most a week of rounds.
    let tmpl = RoundConfig {
        seed,
        round: 0,
        handoffs: a.handoffs,
        chunks: a.chunks,
        chunk: a.chunk,
        base: a.base,
        pace_s: a.pace,
        max_attempts: a.max_attempts,
        dlq_handoffs: a.dlq_handoffs.min(a.handoffs),
        dlq_max_attempts: a.dlq_max_attempts,
        workers: workers.clone(),
        supervisors: supervisors.clone(),
        supervisor_count: a.supervisor_count,
        fault_interval_s: fault_interval,
        fault_mix: fault_mix.clone(),
        failpoint_rate,
        race_rate: a.race_rate,
        pause_max_s: a.pause_max,
        supervisor_restart_max_s: a.supervisor_restart_max,
        fault_seconds: a.fault_seconds,
        faults_after_checkpoints: a.faults_after_checkpoints,
        grace_seconds: a.grace,
        timing: timing.clone(),
        ship,
        ship_max_lag: a.ship_max_lag,
        transport: transport.clone(),
        disk_bytes,
        store_disk_bytes,
        clock: dhp_chaos::config::ClockFaults {
            share: clock_share,
            max_offset_s: a.clock_offset,
            max_rate: a.clock_rate,
        },
        pause_points: a.pause_points.clone(),
        liveness: !a.no_liveness,
        impl_history: a.impl_history == "on",
        allow_unchecked: check::Invariant::parse_allowed(&a.allow_unchecked)?,
        audit: !a.no_audit,
        dhp: dhp.clone(),
        python: python.clone(),
        reference_dir: reference_dir.clone(),
        replay: String::new(),
        engine: "sqlite".into(),
        pg_url: None,
        host: None,
        pg_data: None,
    };
    if scenario.is_some() {
        let o = net_chaos;
        let mut cfg = dhp_chaos::scenario::net_chaos::config(&tmpl, &o)?;
        cfg.replay = replay_command(seed);
        println!(
            "dhp-chaos: scenario net-chaos: {} rounds × {} checkpoints, workers {}, supervisors {} ×{}, pace {}s, peer {}",
            o.rounds,
            o.checkpoints,
            workers.label(),
            supervisors.label(),
            a.supervisor_count,
            cfg.pace_s,
            transport.as_ref().map_or("dhp transport".into(), |t| t.join(" "))
        );
        return dhp_chaos::scenario::run(&cfg, &o, &out);
    }
    let mut engines = Vec::new();
    for s in &a.store {
        engines.push(Engine::parse(s)?);
    }
    if engines.iter().filter(|e| e.label == "sqlite").count() > 1
        || engines.iter().filter(|e| e.label != "sqlite").count() > 1
    {
        bail!("--store twice runs the same seeds on both engines: give sqlite once and postgres (or a URL) once");
    }
    // refuse database faults (and a useless --pg-data) before any engine runs
    db_faults::check_pg_data_used(a.pg_data.as_deref(), engines.iter().any(|e| e.url.is_some()))?;
    for e in &engines {
        let engine = if e.label == "sqlite" { "sqlite" } else { "postgres" };
        db_faults::check_allowed(&fault_mix, engine, e.label == "postgres", e.url.as_deref(), a.pg_data.as_deref())?;
        db_faults::check_db_link(&fault_mix, engine, e.url.as_deref())?;
    }
    let mut codes = Vec::new();
    let mut all_totals = Vec::new();
    for e in &engines {
        let mut t = tmpl.clone();
        t.engine = if e.label == "sqlite" { "sqlite".into() } else { "postgres".into() };
        // the default mix gets the database faults wherever the harness can crash the server
        let db_ok = e.label == "postgres" || (e.url.is_some() && a.pg_data.is_some());
        if a.faults.is_none() && db_ok {
            t.fault_mix.extend(db_faults::DEFAULT_DB_MIX);
        }
        let owned = if e.label == "postgres" { Some(dhp_chaos::pg::OwnedCluster::start()?) } else { None };
        t.pg_data = match &owned {
            Some(c) => Some(c.data_dir.clone()),
            None if e.url.is_some() => a.pg_data.clone(),
            None => None,
        };
        t.pg_url = match (&owned, &e.url) {
            (Some(c), _) => Some(c.url.clone()),
            (None, Some(u)) => Some(u.clone()),
            (None, None) => None,
        };
        if t.pg_url.is_some() {
            let where_ = if owned.is_some() {
                "a throwaway cluster owned by this run".to_string()
            } else {
                dhp_chaos::pg::mask(&e.url.clone().unwrap_or_default())
            };
            println!("dhp-chaos: store postgres: {where_}, one schema per round (chaos_<seed>_<round>)");
        }
        let out_e = if engines.len() > 1 { out.join(&t.engine) } else { out.clone() };
        std::fs::create_dir_all(&out_e).with_context(|| format!("creating {}", out_e.display()))?;
        let (code, totals) = run_rounds(&a, &t, &out_e, started_at)?;
        drop(owned);
        codes.push(code);
        all_totals.push((t.engine.clone(), totals));
    }
    if all_totals.len() > 1 {
        println!("\nsame seeds, both engines:\n{}", report::side_by_side(&all_totals));
    }
    Ok(codes.into_iter().max().unwrap_or(0))
}

/// `--store`: sqlite, postgres (a cluster this run owns) or a server URL.
struct Engine {
    label: String,
    url: Option<String>,
}

impl Engine {
    fn parse(s: &str) -> Result<Engine> {
        Ok(match s {
            "sqlite" => Engine { label: "sqlite".into(), url: None },
            "postgres" | "postgresql" => Engine { label: "postgres".into(), url: None },
            u => {
                dhp_chaos::pg::check_url(u)?;
                Engine { label: "postgres-url".into(), url: Some(u.to_string()) }
            }
        })
    }
}

/// The rounds of one engine: a line per round, the summary, `results.json`.
fn run_rounds(
    a: &RunArgs,
    tmpl: &RoundConfig,
    out: &Path,
    started_at: chrono::DateTime<chrono::Utc>,
) -> Result<(i32, report::Totals)> {
    let seed = tmpl.seed;
    let budget =
        dhp_core::config::duration_from_secs("--budget-minutes (as seconds)", a.budget_minutes * 60.0, 7.0 * 86_400.0)?;
    let t_start = Instant::now();
    let mut reports: Vec<RoundReport> = Vec::new();
    let mut harness_error: Option<anyhow::Error> = None;
    let mut last_round = Duration::ZERO;
    let mut i: u32 = 0;
    // Several rounds: a line per round as it ends. The summary repeats the
    // table only on a terminal (where the lines have scrolled away), not in
    // a log or a pipe.
    let live_table = a.nightly || a.rounds > 1;
    let table_in_summary = !live_table || std::io::stdout().is_terminal();
    loop {
        if a.nightly {
            if t_start.elapsed() + last_round > budget && i > 0 {
                break;
            }
        } else if i >= a.rounds {
            break;
        }
        let rseed = seed.wrapping_add(u64::from(i));
        let mut cfg = tmpl.clone();
        cfg.seed = rseed;
        cfg.round = i;
        cfg.replay = replay_command(rseed);
        let dir = out.join(format!("round-{i:04}"));
        let r0 = Instant::now();
        match run_round(&cfg, &dir, a.quiet, a.hosts) {
            Ok(rs) => {
                for r in rs {
                    if live_table {
                        if reports.is_empty() {
                            println!("{}", report::header());
                        }
                        println!("{}", report::round_line(&r));
                    }
                    let allowed = a.allow_known_reference_bugs && r.unexplained() == 0;
                    let failed = !(r.held || allowed);
                    if failed {
                        println!("  round {i} VIOLATED — artifacts kept in {}", dir.display());
                        println!("  replay: {}", r.replay);
                    } else if a.nightly && !a.keep_passing {
                        // passing rounds keep their reports and timeline only (the history of
                        // a long round is megabytes; a nightly runs dozens of rounds)
                        let rdir = Path::new(&r.dir);
                        for sub in ["store", "transport", "procs", "peer"] {
                            let _ = std::fs::remove_dir_all(rdir.join(sub));
                        }
                        let _ = std::fs::remove_file(rdir.join("history.jsonl"));
                        let _ = std::fs::remove_file(rdir.join("proxy.jsonl"));
                    }
                    reports.push(r);
                    if failed && a.nightly {
                        break;
                    }
                }
                if a.nightly
                    && reports.iter().any(|r| !(r.held || (a.allow_known_reference_bugs && r.unexplained() == 0)))
                {
                    break;
                }
            }
            Err(e) => {
                eprintln!("dhp-chaos: round {i} (seed {rseed}): harness error: {e:#}");
                eprintln!("  artifacts in {}; replay: {}", dir.display(), cfg.replay);
                harness_error = Some(e);
                break;
            }
        }
        last_round = r0.elapsed();
        i += 1;
    }
    let totals = report::totals(&reports);
    print!("{}", report::summary(&reports, &totals, table_in_summary));
    let code = if harness_error.is_some() {
        2
    } else if !reports.iter().all(|r| r.held || (a.allow_known_reference_bugs && r.unexplained() == 0)) {
        1
    } else if reports.iter().any(|r| !r.unchecked.is_empty()) {
        3
    } else {
        0
    };
    let results = json!({
        "seed": seed,
        "started_at": started_at.to_rfc3339(),
        "command": std::env::args().collect::<Vec<_>>(),
        "note": "a seed replays the fault schedule, not the OS interleaving; each round's history.jsonl is the ground truth",
        "exit_code": code,
        "harness_error": harness_error.as_ref().map(|e| format!("{e:#}")),
        "totals": totals,
        "rounds": reports,
    });
    std::fs::write(out.join("results.json"), serde_json::to_vec_pretty(&results)?)?;
    println!("\nresults: {}", out.join("results.json").display());
    match code {
        0 if totals.violations > 0 => println!(
            "dhp-chaos: only known reference weaknesses were hit ({} violations, allowed by --allow-known-reference-bugs)",
            totals.violations
        ),
        0 if reports.is_empty() => println!("dhp-chaos: no round ran"),
        0 if reports.iter().any(|r| !r.unchecked_allowed.is_empty()) => println!(
            "dhp-chaos: NO VIOLATION ({} rounds); unchecked, allowed by --allow-unchecked: {}",
            reports.len(),
            reports.iter().flat_map(|r| r.unchecked_allowed.iter().cloned()).collect::<std::collections::BTreeSet<_>>().into_iter().collect::<Vec<_>>().join(",")
        ),
        0 => println!("dhp-chaos: ALL INVARIANTS HELD ({} rounds)", reports.len()),
        1 => println!("dhp-chaos: INVARIANT VIOLATED"),
        3 => println!("dhp-chaos: INVARIANT(S) UNCHECKED — no violation found, but not everything could be checked (exit 3)"),
        _ => println!("dhp-chaos: HARNESS ERROR"),
    }
    Ok((code, totals))
}

fn run_round(cfg: &RoundConfig, dir: &Path, quiet: bool, hosts: Option<u32>) -> Result<Vec<RoundReport>> {
    let pb = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::with_draw_target(Some(u64::from(cfg.handoffs)), ProgressDrawTarget::stderr())
    };
    pb.set_style(
        ProgressStyle::with_template("{spinner} round {prefix} [{elapsed_precise}] {bar:24} {pos}/{len} ended · {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb.set_prefix(format!("{} (seed {})", cfg.round, cfg.seed));
    let mut last = Instant::now();
    let progress = |live: &round::Live| {
        if last.elapsed() >= Duration::from_millis(100) {
            last = Instant::now();
            pb.set_position(live.terminal as u64);
            pb.set_message(format!(
                "kills {} (failpoints {}), pauses {}, workers started {}, supervisors started {}",
                live.kills, live.failpoint_kills, live.pauses, live.spawned_workers, live.spawned_supervisors
            ));
        }
    };
    let dirs = match hosts {
        Some(n) => dhp_chaos::hosts::run(cfg, dir, n, progress)?,
        None => {
            round::Driver::new(cfg, dir)?.run(progress)?;
            vec![dir.to_path_buf()]
        }
    };
    pb.finish_and_clear();
    if let Some(n) = hosts {
        dhp_chaos::hosts::timeline::write(dir, n)?;
    }
    let mut out = Vec::new();
    for d in dirs {
        let r = check::check_round(&d)?;
        std::fs::write(d.join("round-report.json"), serde_json::to_vec_pretty(&r)?)?;
        timeline::write(&d)?;
        out.push(r);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::replay_args_of;

    #[test]
    fn the_replay_command_drops_run_flags_and_never_prints_a_password() {
        let argv = ["--seed", "7", "--store", "postgres://dhp:s3cret@db:5432/dhp?schema=x", "--quiet", "--chunks", "9"];
        let out = replay_args_of(argv.iter().map(|a| a.to_string()));
        assert_eq!(out, ["--store", "postgres://dhp:***@db:5432/dhp?schema=x", "--chunks", "9"]);
    }
}
