//! A run: the flags' combinations checked (each flag's own range was
//! checked by its value parser), the round template built, the banner
//! printed; then the net-chaos scenario, or the rounds on each engine.
//! One function per step, in the order the checks have always run (so a
//! combination of bad flags is refused with the same message).

use super::args::RunArgs;
use super::replay::replay_command;
use super::rounds::run_engines;
use anyhow::{bail, Context, Result};
use dhp_chaos::config::{default_fault_mix, parse_nemesis, FaultKind, Impl, Nemesis, RoundConfig, Ship, Timing};
use dhp_chaos::site::{self, dashboard::Dashboard};
use dhp_chaos::{locate, python};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// `--failpoint-rate` unless given (or set by `--nemesis`).
const DEFAULT_FAILPOINT_RATE: f64 = 0.2;
/// `--nemesis clock` without `--clock`: the share of processes skewed.
const NEMESIS_CLOCK_SHARE: f64 = 0.3;
/// `--nemesis disk` without `--disk`: the transport server's tmpfs size.
const NEMESIS_DISK: &str = "1m";
/// `--nemesis disk` without `--store-disk`: the SQLite store's tmpfs size.
const NEMESIS_STORE_DISK: &str = "16m";

fn ship_label(s: Ship) -> &'static str {
    match s {
        Ship::File => "file",
        Ship::Tcp => "tcp",
        Ship::TcpAsync => "tcp-async",
    }
}

/// The weight `--lose-unsynced` gives its fault when `--faults` does not name it.
const LOSE_UNSYNCED_WEIGHT: f64 = 6.0;

/// `--lose-unsynced` and `kill-at-commit`: refused where they cannot run
/// (never imitated); `--lose-unsynced` adds its fault to the mix.
fn store_faults_checked(
    a: &RunArgs,
    sqlite_only: bool,
    store_disk: bool,
    fault_mix: &mut Vec<(FaultKind, f64)>,
) -> Result<()> {
    let weighs = |mix: &[(FaultKind, f64)], kind| mix.iter().any(|(k, w)| *k == kind && *w > 0.0);
    if a.chaos.lose_unsynced {
        if !sqlite_only {
            bail!("--lose-unsynced puts the SQLite store on a file system that loses un-fsynced writes; it does not apply to --store postgres (its crash is db-crash)");
        }
        if store_disk {
            bail!("--lose-unsynced and --store-disk both mount a file system under the store: use one");
        }
        dhp_chaos::lazyfs::check_available().map_err(anyhow::Error::msg)?;
        if !fault_mix.iter().any(|(k, _)| *k == FaultKind::LoseUnsynced) {
            fault_mix.push((FaultKind::LoseUnsynced, LOSE_UNSYNCED_WEIGHT));
        }
    } else if weighs(fault_mix, FaultKind::LoseUnsynced) {
        bail!("lose-unsynced faults crash the store's file system: they need --lose-unsynced (root, /dev/fuse)");
    }
    let at_commit = weighs(fault_mix, FaultKind::KillAtCommit) || weighs(fault_mix, FaultKind::PauseAtCommit);
    if (!sqlite_only || a.db.no_audit) && at_commit {
        bail!("kill-at-commit and pause-at-commit faults fire when the harness sees a commit in the SQLite store's audit: they need a SQLite store with the audit on");
    }
    Ok(())
}

/// What the flags come to once checked and their defaults drawn.
struct Resolved {
    ship: Ship,
    clock_share: f64,
    disk_bytes: Option<u64>,
    store_disk_bytes: Option<u64>,
    transport: Option<Vec<String>>,
    python: Option<PathBuf>,
    reference_dir: Option<PathBuf>,
    dhp: PathBuf,
    seed: u64,
    fault_interval: (f64, f64),
    fault_mix: Vec<(FaultKind, f64)>,
    failpoint_rate: f64,
    timing: Timing,
}

/// Run what the flags ask for; the exit code.
pub fn run(a: RunArgs) -> Result<i32> {
    if a.chaos.lose_unsynced && a.net.hosts.is_some() {
        bail!(
            "--lose-unsynced is not simulated under --hosts: there a host death kills processes and the kernel keeps their writes; a one-host SQLite round puts its store on the lazy file system (docs/chaos/faults.md)"
        );
    }
    if let Some(f) = &a.rounds.schedule {
        return super::shrink::replay(f, a.output.out.as_deref(), a.verdict.allow_known_reference_bugs);
    }
    let r = resolve(&a)?;
    let started_at = chrono::Utc::now();
    let out = out_dir(&a, r.seed, started_at)?;
    banner(&a, &r, &out);
    let tmpl = template(&a, r)?;
    if a.rounds.scenario.is_some() {
        return run_scenario(&a, &tmpl, &out);
    }
    with_dashboard(&a, &tmpl, &out, started_at)
}

/// The net-chaos scenario's options from the flags.
fn net_chaos(a: &RunArgs) -> dhp_chaos::scenario::Options {
    dhp_chaos::scenario::Options {
        rounds: a.rounds.net_rounds,
        checkpoints: a.rounds.net_checkpoints,
        quiet: a.output.quiet,
        allow_known_reference_bugs: a.verdict.allow_known_reference_bugs,
    }
}

/// Every flag combination checked, every default drawn.
fn resolve(a: &RunArgs) -> Result<Resolved> {
    let sqlite_only = shape_checked(a)?;
    let ship = ship_checked(a, sqlite_only)?;
    let nemesis = a.chaos.nemesis.as_deref().map(|n| parse_nemesis(n, ship.is_tcp())).transpose()?;
    let (clock_share, disk_bytes, store_disk_bytes) = disks_checked(a, nemesis.as_ref(), sqlite_only, ship)?;
    let transport = a.impls.transport.clone().map(|w| w.0);
    if transport.is_some() && !(ship.is_tcp() || a.rounds.scenario.is_some()) {
        bail!("--transport needs a command and --ship tcp or tcp-async");
    }
    // `--scenario net-chaos --transport python`: the reference's TransportServer is the peer
    let py_peer = a.rounds.scenario.is_some() && transport.as_deref().is_some_and(|t| t == ["python"]);
    let uses_py = a.impls.workers.uses_python() || a.impls.supervisors.uses_python() || py_peer;
    let (python, reference_dir) = if uses_py {
        let py = python::interpreter(a.impls.python.as_deref())?;
        let (dir, version) = python::reference_dir(&py)?;
        if version != "1.3.0" {
            eprintln!("dhp-chaos: warning: reference package is dhp-protocol {version}, expected 1.3.0");
        }
        (Some(py), Some(dir))
    } else {
        (None, None)
    };
    let dhp = locate::dhp_binary(a.impls.dhp.as_deref())?;
    let seed = a.rounds.seed.unwrap_or_else(rand::random::<u64>);
    let fault_interval = match a.chaos.fault_interval {
        Some(i) => i,
        None if uses_py => (0.6, 1.6),
        None => (0.15, 0.55),
    };
    let (fault_mix, failpoint_rate) =
        fault_mix_checked(a, nemesis.as_ref(), ship, sqlite_only, disk_bytes, store_disk_bytes, &dhp)?;
    let timing = Timing {
        lease_interval_s: a.timing.lease_interval,
        lease_max_missed: a.timing.lease_max_missed,
        supervisor_scan_s: a.timing.scan,
        leader_ttl_s: a.timing.leader_ttl,
    };
    if timing.leader_ttl_s <= timing.supervisor_scan_s {
        bail!("--leader-ttl must exceed --scan");
    }
    Ok(Resolved {
        ship,
        clock_share,
        disk_bytes,
        store_disk_bytes,
        transport,
        python,
        reference_dir,
        dhp,
        seed,
        fault_interval,
        fault_mix,
        failpoint_rate,
        timing,
    })
}

/// The stores, the scenario's flags or the census's range; whether every store is SQLite.
fn shape_checked(a: &RunArgs) -> Result<bool> {
    for e in &a.db.store {
        e.check()?;
    }
    let sqlite_only = a.db.store.iter().all(|e| e.is_sqlite());
    let scenario = a.rounds.scenario;
    if scenario.is_some() && a.output.dashboard.is_some() {
        bail!("--dashboard serves the page of seeded rounds; --scenario net-chaos writes no such page");
    }
    if scenario.is_some() {
        let o = net_chaos(a);
        dhp_chaos::scenario::net_chaos::validate(&o, a.load.chunk, a.load.base, a.load.pace, &a.impls.workers)?;
        let many = a.rounds.rounds != 1 || a.rounds.nightly || a.net.hosts.is_some() || !sqlite_only;
        if many
            || a.chaos.faults.is_some()
            || a.chaos.nemesis.is_some()
            || a.chaos.disk.is_some()
            || a.chaos.clock > 0.0
            || a.impls.ship != Ship::File
        {
            bail!("--scenario net-chaos runs its own fault script on one SQLite store with TCP shipping: not with --rounds, --nightly, --hosts, --store postgres, --faults, --nemesis, --disk, --clock or --ship (its rounds: --net-rounds)");
        }
    } else {
        // the census ranges of every handoff fit in 64 bits
        let span = a.load.chunks.checked_mul(a.load.chunk).and_then(|s| s.checked_mul(u64::from(a.load.handoffs)));
        if span.and_then(|s| s.checked_add(a.load.base)).is_none() {
            bail!("--handoffs × --chunks × --chunk numbers from --base overflow 64 bits");
        }
    }
    Ok(sqlite_only)
}

/// How the workers ship (`--hosts` ships over TCP), and whether they can.
fn ship_checked(a: &RunArgs, sqlite_only: bool) -> Result<Ship> {
    let mut ship = a.impls.ship;
    if a.net.hosts.is_some() {
        if !sqlite_only {
            bail!("--hosts runs a SQLite store per host; --store postgres is not supported with --hosts");
        }
        if ship == Ship::File {
            ship = Ship::Tcp; // hosts ship to each other over TCP
        }
        dhp_chaos::hosts::net::check_support()?;
    }
    if ship.is_tcp() && a.impls.workers.uses_python() {
        bail!(
            "--ship {} need builtin workers or a command taking `dhp work`'s --ship-to flags (the reference's work_driver4.py ships to a file only)",
            if a.net.hosts.is_some() { "tcp (--hosts)" } else { ship_label(a.impls.ship) }
        );
    }
    Ok(ship)
}

/// The clock share and the two disks' sizes (`--nemesis clock` / `disk`
/// without their own flags: documented defaults), each checked.
fn disks_checked(
    a: &RunArgs,
    nemesis: Option<&Nemesis>,
    sqlite_only: bool,
    ship: Ship,
) -> Result<(f64, Option<u64>, Option<u64>)> {
    let clock_share = match nemesis {
        Some(n) if n.clock && a.chaos.clock == 0.0 => NEMESIS_CLOCK_SHARE,
        _ => a.chaos.clock,
    };
    let disk_bytes = match nemesis {
        Some(n) if n.disk && a.chaos.disk.is_none() => Some(dhp_chaos::round::parse_size(NEMESIS_DISK)?),
        _ => a.chaos.disk,
    };
    let store_disk = match nemesis {
        Some(n) if n.disk && a.chaos.store_disk.is_none() && sqlite_only => Some(NEMESIS_STORE_DISK.to_string()),
        _ => a.chaos.store_disk.clone(),
    };
    let store_disk_bytes = dhp_chaos::round::store_disk_checked(store_disk.as_deref(), sqlite_only, a.chaos.io_errors)?;
    if disk_bytes.is_some() && !ship.is_tcp() {
        bail!("--disk puts the transport server's logs on a small disk: it needs --ship tcp or tcp-async");
    }
    if disk_bytes.is_some() && !nix::unistd::geteuid().is_root() {
        bail!("--disk mounts a tmpfs and needs root; refusing to run disk faults without it (other faults run without --disk)");
    }
    if clock_share > 0.0 {
        dhp_chaos::clock::libfaketime()?;
    }
    Ok((clock_share, disk_bytes, store_disk_bytes))
}

/// The fault mix (`--nemesis`, `--faults` or the default) and the failpoint
/// rate, each fault refused where it cannot be injected.
fn fault_mix_checked(
    a: &RunArgs,
    nemesis: Option<&Nemesis>,
    ship: Ship,
    sqlite_only: bool,
    disk_bytes: Option<u64>,
    store_disk_bytes: Option<u64>,
    dhp: &Path,
) -> Result<(Vec<(FaultKind, f64)>, f64)> {
    let mut failpoint_rate = a.chaos.failpoint_rate.unwrap_or(DEFAULT_FAILPOINT_RATE);
    // failpoints asked for by name (not just the default rate)
    let mut failpoints_named = a.chaos.failpoint_rate.is_some_and(|r| r > 0.0);
    let mut fault_mix = match (nemesis, &a.chaos.faults) {
        (Some(n), _) => {
            if !n.failpoints {
                failpoint_rate = 0.0;
            }
            failpoints_named |= n.failpoints;
            // a PostgreSQL store has no store directory to fill
            n.mix.iter().copied().filter(|(k, _)| sqlite_only || *k != FaultKind::StoreFull).collect()
        }
        (None, Some(m)) => m.0.clone(),
        (None, None) if ship.is_tcp() => {
            let mut m = default_fault_mix();
            m.push((FaultKind::KillTransport, 6.0));
            if a.net.hosts.is_some() {
                m.push((FaultKind::Partition, 8.0));
            }
            m
        }
        (None, None) => default_fault_mix(),
    };
    let weighs = |mix: &[(FaultKind, f64)], f: &dyn Fn(FaultKind) -> bool| mix.iter().any(|(k, w)| f(*k) && *w > 0.0);
    if a.net.hosts.is_none() && weighs(&fault_mix, &|k| matches!(k, FaultKind::Partition | FaultKind::HostDeath)) {
        bail!("partitions and host death need --hosts N (there is no network and no second host in a one-host round)");
    }
    if disk_bytes.is_none() && weighs(&fault_mix, &|k| k == FaultKind::DiskFull) {
        bail!("disk-full faults fill the transport server's disk: they need --disk SIZE (and --ship tcp)");
    }
    if store_disk_bytes.is_none() && weighs(&fault_mix, &|k| k == FaultKind::StoreFull) {
        bail!("store-full faults fill the SQLite store's disk: they need --store-disk SIZE (root)");
    }
    store_faults_checked(a, sqlite_only, store_disk_bytes.is_some(), &mut fault_mix)?;
    if a.load.workload != "service" && weighs(&fault_mix, &|k| k == FaultKind::StopAtChunk) {
        bail!("stop-at-chunk faults are placed by the harness's workload service: they need --workload service");
    }
    if !ship.is_tcp() && weighs(&fault_mix, &|k| k == FaultKind::Link) {
        bail!("link faults act on the TCP link to the transport server: they need --ship tcp or tcp-async");
    }
    // a failpoint that cannot fire is refused (asked for) or switched off and said (the default),
    // never left to do nothing in silence
    let builtin_workers = matches!(a.impls.workers, Impl::Builtin | Impl::Mixed);
    if failpoint_rate > 0.0 && builtin_workers && !locate::has_failpoints(dhp)? {
        let why = format!(
            "{} has no failpoints (built without the cargo feature `failpoints`, as installed tools are), so a failpoint fault cannot be injected",
            dhp.display()
        );
        if failpoints_named {
            bail!("{why}: refusing --nemesis failpoint / --failpoint-rate; pass --dhp a build with them (`cargo build -p dhp --bin dhp --features dhp-core/failpoints`), or leave failpoints out");
        }
        println!("dhp-chaos: {why}; failpoint faults are off for this run (--dhp a build with them to inject them)");
        failpoint_rate = 0.0;
    }
    Ok((fault_mix, failpoint_rate))
}

/// The run directory: `--out`, or a new one under the temporary directory; new or empty.
fn out_dir(a: &RunArgs, seed: u64, started_at: chrono::DateTime<chrono::Utc>) -> Result<PathBuf> {
    let out = match &a.output.out {
        Some(o) => o.clone(),
        None => {
            std::env::temp_dir().join("dhp-chaos").join(format!("seed-{seed}-{}", started_at.format("%Y%m%dT%H%M%S")))
        }
    };
    // a second run into one directory would mix its rounds and results with the first's
    if std::fs::read_dir(&out).is_ok_and(|mut d| d.next().is_some()) {
        bail!("--out {} is not empty (a previous run's?): give a new or empty directory", out.display());
    }
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    Ok(out)
}

/// The lines a run starts with.
fn banner(a: &RunArgs, r: &Resolved, out: &Path) {
    println!("dhp-chaos: seed {} (replays the fault schedule, not the OS interleaving; verdicts rest on the store audit, the workload service and the processes; history.jsonl is optional detail)", r.seed);
    println!("dhp-chaos: run directory {}", out.display());
    if a.rounds.scenario.is_some() {
        return;
    }
    println!(
        "dhp-chaos: workers {}, supervisors {} ×{}, shipping {}, {} handoffs × {} chunks, faults every {:.2}–{:.2}s, lease {}s×{}, dhp {}",
        a.impls.workers.label(),
        a.impls.supervisors.label(),
        a.impls.supervisor_count,
        match (a.net.hosts, r.ship) {
            (Some(n), Ship::TcpAsync) => format!("tcp-async between {n} hosts"),
            (Some(n), _) => format!("tcp between {n} hosts"),
            _ => ship_label(a.impls.ship).to_string(),
        },
        a.load.handoffs,
        a.load.chunks,
        r.fault_interval.0,
        r.fault_interval.1,
        r.timing.lease_interval_s,
        r.timing.lease_max_missed,
        r.dhp.display()
    );
}

/// The configuration every round of the run starts from.
fn template(a: &RunArgs, r: Resolved) -> Result<RoundConfig> {
    Ok(RoundConfig {
        seed: r.seed,
        round: 0,
        handoffs: a.load.handoffs,
        chunks: a.load.chunks,
        chunk: a.load.chunk,
        base: a.load.base,
        pace_s: a.load.pace,
        max_attempts: a.load.max_attempts,
        dlq_handoffs: a.load.dlq_handoffs.min(a.load.handoffs),
        dlq_max_attempts: a.load.dlq_max_attempts,
        workers: a.impls.workers.clone(),
        supervisors: a.impls.supervisors.clone(),
        supervisor_count: a.impls.supervisor_count,
        fault_interval_s: r.fault_interval,
        fault_mix: r.fault_mix,
        failpoint_rate: r.failpoint_rate,
        race_rate: a.chaos.race_rate,
        pause_max_s: a.chaos.pause_max,
        supervisor_restart_max_s: a.chaos.supervisor_restart_max,
        fault_seconds: a.timing.fault_seconds,
        faults_after_checkpoints: a.timing.faults_after_checkpoints,
        grace_seconds: a.timing.grace,
        timing: r.timing,
        ship: r.ship,
        ship_max_lag: a.impls.ship_max_lag,
        transport: r.transport,
        disk_bytes: r.disk_bytes,
        store_disk_bytes: r.store_disk_bytes,
        lose_unsynced: a.chaos.lose_unsynced,
        clock: dhp_chaos::config::ClockFaults {
            share: r.clock_share,
            max_offset_s: a.chaos.clock_offset,
            max_rate: a.chaos.clock_rate,
        },
        pause_points: a.impls.pause_points.clone(),
        liveness: !a.impls.no_liveness,
        impl_history: a.impls.impl_history == "on",
        allow_unchecked: dhp_chaos::check::Invariant::parse_allowed(&a.verdict.allow_unchecked)?,
        allow_uncovered: dhp_chaos::coverage::parse_allowed(&a.verdict.allow_uncovered)?,
        steer: a.chaos.steer,
        script: None,
        audit: !a.db.no_audit,
        workload: a.load.workload == "service",
        dhp: r.dhp,
        python: r.python,
        reference_dir: r.reference_dir,
        replay: String::new(),
        run_id: format!("{:08x}", rand::random::<u32>()),
        engine: "sqlite".into(),
        pg_url: None,
        host: None,
        pg_data: None,
        pg_cluster: None,
        failover_manager: None,
    })
}

/// `--scenario net-chaos`: its own rounds on the template.
fn run_scenario(a: &RunArgs, tmpl: &RoundConfig, out: &Path) -> Result<i32> {
    let o = net_chaos(a);
    let mut cfg = dhp_chaos::scenario::net_chaos::config(tmpl, &o)?;
    cfg.replay = replay_command(tmpl.seed);
    println!(
        "dhp-chaos: scenario net-chaos: {} rounds × {} checkpoints, workers {}, supervisors {} ×{}, pace {}s, peer {}",
        o.rounds,
        o.checkpoints,
        a.impls.workers.label(),
        a.impls.supervisors.label(),
        a.impls.supervisor_count,
        cfg.pace_s,
        tmpl.transport.as_ref().map_or("dhp transport".into(), |t| t.join(" "))
    );
    dhp_chaos::scenario::run(&cfg, &o, out)
}

/// The rounds on each engine, with `--dashboard` served beside them: bound
/// first (a port taken is an error before any round), stopped once the
/// page has said the run is over.
fn with_dashboard(
    a: &RunArgs,
    tmpl: &RoundConfig,
    out: &Path,
    started_at: chrono::DateTime<chrono::Utc>,
) -> Result<i32> {
    let dash = match a.output.dashboard {
        Some(addr) => {
            let listener = std::net::TcpListener::bind(addr)
                .with_context(|| format!("--dashboard {addr}: binding the dashboard's address"))?;
            let bound = listener.local_addr().context("--dashboard: reading the bound address")?;
            let guard = site::guard::Guard::new(&a.output.allow_host, a.output.dashboard_token.clone());
            let token = guard.token().to_string();
            let d = Dashboard::new(out, guard);
            let stop = Arc::new(AtomicBool::new(false));
            let (d2, stop2) = (Arc::clone(&d), Arc::clone(&stop));
            let h = std::thread::spawn(move || d2.run(listener, stop2));
            println!(
                "dhp-chaos: dashboard http://{bound}/login?token={token} (live while the rounds run; the page stays in {})",
                out.join(site::INDEX).display()
            );
            Some((d, stop, h))
        }
        None => None,
    };
    let code = run_engines(a, tmpl, out, started_at, dash.as_ref().map(|d| d.0.as_ref()));
    if let Some((d, stop, h)) = dash {
        d.finished(code.as_ref().map_or(2, |c| *c));
        // the event streams send `done` within a tick; then the server stops
        std::thread::sleep(std::time::Duration::from_millis(600));
        stop.store(true, Ordering::SeqCst);
        match h.join() {
            Ok(Err(e)) => eprintln!("dhp-chaos: dashboard: {:#}", anyhow::Error::from(e)),
            Err(_) => eprintln!("dhp-chaos: dashboard: its thread panicked"),
            Ok(Ok(())) => {}
        }
    }
    code
}
