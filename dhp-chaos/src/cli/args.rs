//! The command line: every flag, typed and range-checked by its value
//! parser ([`super::parse`]), so `run` never sees a bad value.

use super::parse::{self, Engine, FaultMix, Words};
use clap::{Parser, Subcommand};
use dhp_chaos::config::{Impl, Ship};
use dhp_chaos::scenario::Scenario;
use std::path::PathBuf;

const ABOUT: &str =
    "Seeded fault injection against real DHP worker and supervisor processes, with an invariant checker.";

const LONG_ABOUT: &str = "\
Seeded fault injection against real DHP worker and supervisor processes, with an invariant checker.

Each round dispatches M prime-census handoffs, starts real worker processes and at least two \
supervisor processes, and lets a seeded injector SIGKILL workers, the leader supervisor, followers \
and several processes at once, SIGSTOP workers (SIGCONT after they were replaced: a woken zombie \
must be fenced), and arm failpoints that kill a worker inside the protocol. A provisioner starts \
recovery workers for orphans and replacement supervisors. Afterwards the checker verifies, from the \
harness's own sources (the store audit, the workload service, the processes it spawned and signalled, \
the store and the transport logs; the history the processes write is optional detail): each handoff completed exactly once with the \
recomputed result or parked in the DLQ with checkpoints intact; seqs continuous; fences never go \
backwards along commit order and no two holders' writes interleave; the transport log agrees with \
the store; nothing is stuck; work redone per fault is at most one chunk; and it reports kill → \
orphan detection latency (p50/p99).

REPLAY: a seed replays the fault SCHEDULE (the kind and time of every fault exactly; the victim by \
position among the processes eligible at that moment; failpoints, racing recoverers, delays), NOT \
the OS interleaving — process start-up, scheduling and I/O timing differ between runs, so the same \
seed can take a different path. Verdicts rest on what the harness saw itself; the history the \
processes write (history.jsonl in the round directory) is optional detail, and an invariant that \
needs it and lacks it is UNCHECKED (CONTRACT.md §4–§5). `dhp-chaos analyze DIR` re-checks a saved \
run from its files.

Round i of seed S uses seed S+i, so `--seed S+i --rounds 1` replays that round's schedule; a \
failing round prints this exact command.

Another implementation's workers and supervisors: CONTRACT.md, contract version 2 (command lines, \
environment, workload service, exit codes, the optional history).

Exit status: 0 every invariant held (or was not exercised), 1 a violation, 2 harness error, 3 an \
invariant UNCHECKED (a source it needs was missing, or it checked nothing where the harness saw events) \
and not named by --allow-unchecked, 4 held but NOT COVERED: a coverage target the configuration allows \
(a woken zombie that tried to write, a race, the DLQ, a fault kind of the mix, ...) was never reached and \
--allow-uncovered did not name it (docs/chaos-coverage.md).";

/// The command line.
#[derive(Parser)]
#[command(name = "dhp-chaos", version, about = ABOUT, long_about = LONG_ABOUT, args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// `analyze`, or none: run rounds.
    #[command(subcommand)]
    pub cmd: Option<Cmd>,
    /// The flags of a run.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Subcommands.
#[derive(Subcommand)]
pub enum Cmd {
    /// List the invariants, as their declarations say them: name, PROTOCOL.md sections and what
    /// each promises (text); every field (json); dhp-chaos/README.md's table (markdown); or
    /// CONTRACT.md's table of the sources each needs (sources).
    List {
        #[arg(long, default_value = "text", value_parser = ["text", "json", "markdown", "sources"])]
        format: String,
    },
    /// Re-check a saved run (a run directory with round-* subdirectories, or one round directory).
    Analyze {
        dir: PathBuf,
        /// Rewrite timeline.svg as well.
        #[arg(long)]
        timeline: bool,
    },
    /// The store audit on a SQLite store of your own: `install` its triggers, or `export` it as JSON lines for dhp-model-judge.
    Audit {
        #[arg(value_parser = ["install", "export"])]
        action: String,
        /// The store directory (holding dhp.sqlite3).
        store: PathBuf,
    },
    /// Shrink a failing run: replay its first failing round's fault schedule with faults, handoffs,
    /// supervisors and chunks removed while it still fails the same invariant; write the smallest as a
    /// schedule file (`RUN_DIR/shrink/schedule.json`) that `dhp-chaos --schedule FILE` replays.
    Shrink {
        dir: PathBuf,
        /// Replays of the final schedule (its reproduction rate is k of these).
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
        replays: u32,
        /// Replays of each candidate before it is dropped as passing (the OS interleaving varies).
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
        tries: u32,
        /// Stop reducing after this many minutes (the final replays still run).
        #[arg(long, default_value_t = 10.0, value_parser = parse::budget_minutes)]
        budget_minutes: f64,
        /// Stop reducing after this many replay rounds (the first replays of the recorded schedule
        /// and the final replays not counted): a budget that does not shrink on a busy machine
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10000))]
        budget_rounds: Option<u32>,
    },
    /// The nightly findings ledger: mark each invariant the night's runs of LABEL violated as new,
    /// ongoing or regressed (the others of LABEL resolved), and check the coverage thresholds
    /// (exit 1 when an applicable cell or situation was hit in too few rounds). --regressions prints
    /// the arguments of LABEL's regression rounds, one line each (docs/chaos-coverage.md).
    Ledger {
        /// The night's run directories (each with results.json).
        dirs: Vec<PathBuf>,
        /// The ledger file (JSON; created when absent).
        #[arg(long)]
        ledger: PathBuf,
        /// The nightly job's name: findings are kept per label.
        #[arg(long)]
        label: String,
        /// The night's name (default: today's date, UTC).
        #[arg(long)]
        night: Option<String>,
        /// Coverage thresholds (e.g. dhp-chaos/nightly-coverage.json).
        #[arg(long)]
        thresholds: Option<PathBuf>,
        /// Print the label's regression rounds instead.
        #[arg(long)]
        regressions: bool,
    },
    /// The database control plane by hand (the rounds' PostgreSQL layouts): `start` one (prints
    /// `DIR URL`), `step` it (kill/start NODE, cut/cut-monitor/heal NODE, primary, promote, switchover,
    /// detach, rejoin), `stop` it.
    Db {
        #[command(subcommand)]
        action: DbAction,
    },
    /// (internal) The watcher of a database this program set up: once process PID has exited,
    /// tear down the database of KIND (single, cluster, auto) in DIR.
    #[command(hide = true)]
    DbWatch {
        pid: u32,
        #[arg(value_parser = ["single", "cluster", "auto"])]
        kind: String,
        dir: PathBuf,
    },
}

/// `dhp-chaos db …`.
#[derive(Subcommand)]
pub enum DbAction {
    /// Set up a database of KIND (single, cluster, auto) and leave it running; prints `DIR URL`.
    Start {
        #[arg(value_parser = ["single", "cluster", "auto"])]
        kind: String,
        /// cluster: every standby asynchronous.
        #[arg(long = "async")]
        async_: bool,
        /// Tear it down once process PID has exited.
        #[arg(long, value_name = "PID")]
        watch: Option<u32>,
    },
    /// One step on the database of KIND in DIR.
    Step {
        #[arg(value_parser = ["single", "cluster", "auto"])]
        kind: String,
        dir: PathBuf,
        step: String,
        node: Option<String>,
    },
    /// Stop every process of the database of KIND in DIR and remove it.
    Stop {
        #[arg(value_parser = ["single", "cluster", "auto"])]
        kind: String,
        dir: PathBuf,
    },
}

/// The flags of a run, each checked by its value parser, in groups (each
/// its own heading in `--help`; the flags' names are the same as ever).
#[derive(clap::Args)]
pub struct RunArgs {
    /// How many rounds, from which seed, or a named scenario or a recorded schedule instead.
    #[command(flatten)]
    pub rounds: RoundsArgs,
    /// The handoffs each round dispatches and the work they do.
    #[command(flatten)]
    pub load: WorkloadArgs,
    /// The workers, supervisors and transport the rounds run, and how they ship.
    #[command(flatten)]
    pub impls: ImplArgs,
    /// The protocol's knobs and the phases of a round.
    #[command(flatten)]
    pub timing: TimingArgs,
    /// What the injector does, how often, and the fault families that need a flag of their own.
    #[command(flatten)]
    pub chaos: FaultArgs,
    /// The store the rounds run on, and the PostgreSQL database the harness controls.
    #[command(flatten)]
    pub db: DbArgs,
    /// Simulated hosts, each its own network namespace.
    #[command(flatten)]
    pub net: HostArgs,
    /// Where the run is written and shown.
    #[command(flatten)]
    pub output: OutputArgs,
    /// What may end unchecked, uncovered or known-broken without failing the run.
    #[command(flatten)]
    pub verdict: VerdictArgs,
}

/// How many rounds, from which seed, or a named scenario or a recorded schedule instead.
#[derive(clap::Args)]
#[command(next_help_heading = "Rounds")]
pub struct RoundsArgs {
    /// Number of rounds (round i uses seed S+i); at least 1.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// Seed of the fault schedule; drawn and printed when absent. Replays the schedule, not the OS interleaving.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Replay a schedule file written by `dhp-chaos shrink` (one round: its configuration and scripted
    /// faults; the other round flags are ignored, --out and --allow-known-reference-bugs are not).
    #[arg(long, value_name = "FILE")]
    pub schedule: Option<PathBuf>,
    /// Run rounds until --budget-minutes is spent; stop at the first violation and keep its artifacts.
    #[arg(long)]
    pub nightly: bool,
    /// --nightly: minutes to spend.
    #[arg(long, default_value_t = 30.0, value_parser = parse::budget_minutes)]
    pub budget_minutes: f64,
    /// A named scenario instead of the seeded fault mix: net-chaos (a worker per round SIGKILLed mid-ship,
    /// a standby finishes; then how many checkpoints landed on the peer, and the rework). See docs/chaos/net-chaos.md.
    #[arg(long, value_parser = parse::scenario)]
    pub scenario: Option<Scenario>,
    /// --scenario net-chaos: rounds, one handoff and one kill each.
    #[arg(long, default_value_t = 4)]
    pub net_rounds: u32,
    /// --scenario net-chaos: checkpoints (census chunks) per round.
    #[arg(long, default_value_t = 6)]
    pub net_checkpoints: u64,
}

/// The handoffs each round dispatches and the work they do.
#[derive(clap::Args)]
#[command(next_help_heading = "Workload")]
pub struct WorkloadArgs {
    /// Handoffs per round (M).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub handoffs: u32,
    /// Chunks per handoff.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub chunks: u64,
    /// Numbers per chunk.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub chunk: u64,
    /// First handoff's lo (the reference's harness uses 5,000,000).
    #[arg(long, default_value_t = 5_000_000)]
    pub base: u64,
    /// Worker sleep after each chunk, seconds.
    #[arg(long, default_value_t = 0.03, value_parser = parse::pace)]
    pub pace: f64,
    /// max_attempts of ordinary handoffs.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(i64).range(1..=1_000_000))]
    pub max_attempts: i64,
    /// Handoffs per round dispatched with --dlq-max-attempts (exercise the DLQ path).
    #[arg(long, default_value_t = 1)]
    pub dlq_handoffs: u32,
    /// max_attempts of the DLQ handoffs.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(i64).range(1..=1_000_000))]
    pub dlq_max_attempts: i64,
    /// service: workers get every census chunk from the harness's workload service (DHP_WORKLOAD_URL), which
    /// records who asked for what under which fence; local: workers compute chunks themselves (CONTRACT.md
    /// v1 workers) and the checks that need the service's record are UNCHECKED.
    #[arg(long, default_value = "service", value_parser = ["service", "local"])]
    pub workload: String,
}

/// The workers, supervisors and transport the rounds run, and how they ship.
#[derive(clap::Args)]
#[command(next_help_heading = "Implementations under test")]
pub struct ImplArgs {
    /// Workers: builtin (dhp work), python (reference work_driver4.py), mixed (seeded per spawn), or a command
    /// taking `ROOT --runner ID claim|recover HID --pace S --history FILE --ship LOG` (CONTRACT.md §1).
    #[arg(long, default_value = "builtin", value_parser = parse::workers)]
    pub workers: Impl,
    /// Supervisors: builtin (dhp supervisor), python (reference supervisor3_watch.py), or a command taking
    /// `ROOT ID SECONDS --history FILE`.
    #[arg(long, default_value = "builtin", value_parser = parse::supervisors)]
    pub supervisors: Impl,
    /// Supervisor processes kept alive (at least 2).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(2..=64))]
    pub supervisor_count: u32,
    /// The dhp binary (default: next to this executable, rebuilt first under cargo).
    #[arg(long)]
    pub dhp: Option<PathBuf>,
    /// Python interpreter for python workers/supervisors (default $DHP_PYTHON or <repo>/.venv/bin/python).
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// The transport server command for --ship tcp (default `dhp transport`); `LOGDIR --port P` is appended
    /// and it must print `listening on HOST:PORT` (for mutant servers in tests).
    #[arg(long, value_parser = parse::command)]
    pub transport: Option<Words>,
    /// How workers ship checkpoints: file (--ship LOG), tcp (--ship-to a `dhp transport` server that is
    /// itself SIGKILLed and restarted), or tcp-async. TCP needs builtin workers.
    #[arg(long, default_value = "file", value_parser = parse::ship)]
    pub ship: Ship,
    /// --ship tcp-async: unacknowledged lines a worker may run ahead of the peer (`dhp work --ship-max-lag`),
    /// checked by the async-lag invariant.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub ship_max_lag: u64,
    /// Builtin workers publish no liveness token (lease-only detection, like the reference).
    #[arg(long)]
    pub no_liveness: bool,
    /// on: workers and supervisors get the round's history file (detail for the checker); off: they get
    /// /dev/null and only the harness's own records count (see CONTRACT.md).
    #[arg(long, default_value = "on", value_parser = ["on", "off"])]
    pub impl_history: String,
    /// Pause points for python workers: the shim SIGSTOPs the worker between the reference's ownership check
    /// and its write, e.g. checkpoint.after_check=0.02,complete.after_check=0.3 (probability per pass).
    #[arg(long, default_value = "")]
    pub pause_points: String,
}

/// The protocol's knobs and the phases of a round.
#[derive(clap::Args)]
#[command(next_help_heading = "Timing")]
pub struct TimingArgs {
    /// DHP_LEASE_INTERVAL_S for every process.
    #[arg(long, default_value_t = 0.2, value_parser = parse::knob_secs)]
    pub lease_interval: f64,
    /// DHP_LEASE_MAX_MISSED.
    #[arg(long, default_value_t = 3, value_parser = parse::lease_max_missed)]
    pub lease_max_missed: i64,
    /// DHP_SUPERVISOR_SCAN_S.
    #[arg(long, default_value_t = 0.1, value_parser = parse::knob_secs)]
    pub scan: f64,
    /// DHP_LEADER_TTL_S.
    #[arg(long, default_value_t = 0.6, value_parser = parse::knob_secs)]
    pub leader_ttl: f64,
    /// Longest fault phase per round, seconds.
    #[arg(long, default_value_t = 90.0, value_parser = parse::fault_seconds)]
    pub fault_seconds: f64,
    /// Start the fault schedule once this many checkpoints are committed (its times and
    /// --fault-seconds count from then): a fault then always finds work under way, however
    /// slowly a loaded machine starts the workers. 0 (default): at the round's start.
    #[arg(long, default_value_t = 0)]
    pub faults_after_checkpoints: u64,
    /// After faults stop, seconds to wait for every handoff to end.
    #[arg(long, default_value_t = 30.0, value_parser = parse::delay)]
    pub grace: f64,
}

/// What the injector does, how often, and the fault families that need a flag of their own.
#[derive(clap::Args)]
#[command(next_help_heading = "Faults")]
pub struct FaultArgs {
    /// Fault mix, e.g. kill-worker=50,kill-leader=10,kill-follower=8,kill-multi=14,pause=12.
    #[arg(long, value_parser = parse::faults)]
    pub faults: Option<FaultMix>,
    /// The fault mix by family: kill,pause,failpoint,partition,link,host,clock,disk,db-link (partition and host
    /// need --hosts; link needs --ship tcp or --hosts; db-link a PostgreSQL store; clock without --clock skews 30% of
    /// processes; disk without --disk puts the transport server's logs on a 1m tmpfs and, with SQLite, the store on a
    /// 16m one via --store-disk). Sets --faults (default weights) and
    /// --failpoint-rate (0 unless failpoint is named); not with --faults.
    #[arg(long, conflicts_with = "faults")]
    pub nemesis: Option<String>,
    /// Seconds between faults, MIN,MAX (default 0.15,0.55; 0.6,1.6 when python processes take part).
    #[arg(long, value_parser = parse::fault_interval)]
    pub fault_interval: Option<(f64, f64)>,
    /// Probability that a builtin worker starts with a failpoint armed (default 0.2; 0 when the `dhp`
    /// used has no failpoints, which is said at the start; given explicitly, such a `dhp` is refused).
    #[arg(long, value_parser = parse::probability)]
    pub failpoint_rate: Option<f64>,
    /// Probability that an orphan gets 2–3 racing recoverers.
    #[arg(long, default_value_t = 0.15, value_parser = parse::probability)]
    pub race_rate: f64,
    /// Longest SIGSTOP, seconds.
    #[arg(long, default_value_t = 2.0, value_parser = parse::pause_max)]
    pub pause_max: f64,
    /// Replacement supervisors start within this many seconds.
    #[arg(long, default_value_t = 0.3, value_parser = parse::delay)]
    pub supervisor_restart_max: f64,
    /// Coverage-guided scheduling: at each fault, steer toward what the round has not reached yet (a pause
    /// while no zombie was woken after its replacement, a race of recoverers, a leader kill, a kind that never
    /// fired, the DLQ handoff's holder); seeded (a stream of its own) and recorded as `steer` events.
    #[arg(long)]
    pub steer: bool,
    /// Clock faults: this share (0–1) of worker and supervisor spawns run with libfaketime preloaded, their
    /// clock off by a seeded offset and running at a seeded rate (needs the Debian package faketime).
    #[arg(long, default_value_t = 0.0, value_parser = parse::probability)]
    pub clock: f64,
    /// Clock faults: offsets uniform in ±this many seconds.
    #[arg(long, default_value_t = 2.0, value_parser = parse::clock_offset)]
    pub clock_offset: f64,
    /// Clock faults: rates log-uniform in [1/this, this].
    #[arg(long, default_value_t = 1.25, value_parser = parse::clock_rate)]
    pub clock_rate: f64,
    /// Disk faults (--ship tcp, root): mount a tmpfs of SIZE (e.g. 256k) as the transport server's log directory;
    /// the disk-full fault fills it until ENOSPC. Unmounted at the end of each round, its logs kept.
    #[arg(long, value_name = "SIZE", value_parser = parse::disk_size)]
    pub disk: Option<u64>,
    /// Store disk faults (SQLite store, root): mount a tmpfs of SIZE (e.g. 16m) as the round's store directory;
    /// the store-full fault fills it until ENOSPC. Unmounted at the end of each round, the store kept.
    #[arg(long, value_name = "SIZE")]
    pub store_disk: Option<String>,
    /// I/O error injection: not simulated (this harness needs a device-mapper error target, which these
    /// machines' kernels lack); refused with the reason.
    #[arg(long)]
    pub io_errors: bool,
    /// Put the SQLite store on the harness's lazy FUSE file system and add the lose-unsynced fault (weight 6
    /// unless --faults names it): every worker and supervisor SIGKILLed, then every store file back to its last
    /// fsync (root, /dev/fuse; one-host SQLite rounds only; docs/chaos/faults.md).
    #[arg(long)]
    pub lose_unsynced: bool,
}

/// The store the rounds run on, and the PostgreSQL database the harness controls.
#[derive(clap::Args)]
#[command(next_help_heading = "Database")]
pub struct DbArgs {
    /// The store: sqlite (default), postgres (a throwaway cluster this run starts and stops, the
    /// layout of scripts/pg.sh) or a postgres:// URL of an existing server (each round gets its own schema).
    /// Given twice (sqlite and postgres), runs the same seeds on both engines and prints them side by side.
    #[arg(long, default_value = "sqlite", value_parser = parse::store)]
    pub store: Vec<Engine>,
    /// With --store postgres://…: the server's cluster directory (the DIR `scripts/pg.sh start`
    /// prints), which allows the database faults (db-crash, db-terminate-backend, db-stall);
    /// without it they are refused. --store postgres owns its cluster and needs none.
    #[arg(long, value_name = "DIR")]
    pub pg_data: Option<PathBuf>,
    /// With --store postgres: a replicated cluster instead of one server (the layout of scripts/pg-cluster.sh): a primary,
    /// a synchronous standby and an asynchronous one (sync), or every standby asynchronous (async); clients
    /// get a multi-host URL (target_session_attrs=read-write). Failover manager: the harness (pg_ctl
    /// promote). Allows db-failover (in the default mix instead of db-crash).
    #[arg(long, value_name = "sync|async", value_parser = ["sync", "async"])]
    pub pg_cluster: Option<String>,
    /// --pg-cluster: who promotes a standby. harness: the harness itself (pg_ctl promote, three servers
    /// on loopback). pg_auto_failover: a real failover manager (Debian's postgresql-15-auto-failover:
    /// a monitor and a keeper per node, every node in its own network namespace; quorum-synchronous
    /// replication, sync only; needs root). Adds db-primary-partition, db-monitor-partition and
    /// db-standby-lost to the default mix.
    #[arg(long, value_name = "harness|pg_auto_failover", value_parser = ["harness", "pg_auto_failover"], requires = "pg_cluster")]
    pub failover_manager: Option<String>,
    /// Do not install the store audit (triggers + dhpchaos_audit table): the audit-based checks are then UNCHECKED.
    #[arg(long)]
    pub no_audit: bool,
}

/// Simulated hosts, each its own network namespace.
#[derive(clap::Args)]
#[command(next_help_heading = "Hosts")]
pub struct HostArgs {
    /// Simulated hosts (at least 2; needs root): each a network namespace with its own address, store,
    /// supervisors, workers and transport server; host K ships to host K+1 over TCP (implies --ship tcp).
    #[arg(long, value_parser = parse::hosts)]
    pub hosts: Option<u32>,
}

/// Where the run is written and shown.
#[derive(clap::Args)]
#[command(next_help_heading = "Output")]
pub struct OutputArgs {
    /// Run directory (default: $TMPDIR/dhp-chaos/seed-S-<time>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// No progress display.
    #[arg(long, short)]
    pub quiet: bool,
    /// In --nightly mode, keep the store, logs and process logs of passing rounds too.
    #[arg(long)]
    pub keep_passing: bool,
    /// Serve the run's page (index.html) live on this loopback address while the rounds run
    /// (e.g. 127.0.0.1:8080; port 0 picks a free one, printed at the start); not a non-loopback address.
    #[arg(long, value_name = "ADDR", value_parser = dhp_chaos::site::dashboard::parse_addr)]
    pub dashboard: Option<std::net::SocketAddr>,
    /// --dashboard: the token a browser logs in with (/login?token=T) or a client sends
    /// (Authorization: Bearer T); a random one, printed in the dashboard's URL, when not given.
    #[arg(long, value_name = "T", env = "DHP_CHAOS_DASHBOARD_TOKEN", hide_env_values = true)]
    pub dashboard_token: Option<String>,
    /// --dashboard: a host name the dashboard also answers to (Host/Origin), beside the loopback
    /// names (localhost, 127.0.0.1, [::1]); repeatable. Requests naming any other host get 403.
    #[arg(long, value_name = "NAME", value_parser = dhp_chaos::site::guard::check_host)]
    pub allow_host: Vec<String>,
}

/// What may end unchecked, uncovered or known-broken without failing the run.
#[derive(clap::Args)]
#[command(next_help_heading = "Verdicts")]
pub struct VerdictArgs {
    /// Invariants that may end UNCHECKED without the exit code 3 (comma-separated names, or `all`).
    #[arg(long, value_delimiter = ',', value_name = "NAME,...")]
    pub allow_unchecked: Vec<String>,
    /// Coverage targets that may stay unreached without exit 4 (comma-separated: a situation such as
    /// zombies, races, dlq, or a fault kind; `all` for every one). See docs/chaos-coverage.md.
    #[arg(long, value_delimiter = ',', value_name = "NAME,...")]
    pub allow_uncovered: Vec<String>,
    /// Exit 0 (and, with --nightly, keep going) when every violation is a documented weakness of the
    /// Python reference (torn claim/recover, check-then-write, no catch-up of the peer log); they are still reported and saved.
    #[arg(long)]
    pub allow_known_reference_bugs: bool,
}
