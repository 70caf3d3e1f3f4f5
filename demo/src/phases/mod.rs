//! The demo's run, one function per phase. [`Phase::ALL`] is the order they
//! run in; the context records the phase in progress, so a failed run's
//! verdict names the phase it failed in (`failed_phase` in `--json`).

use super::*;

mod binaries;
use binaries::binaries;

mod page_source;
use page_source::page_source;

mod dispatch;
use dispatch::dispatch;

mod transport;
use transport::transport;

mod supervisor;
use supervisor::supervisor;

mod worker_a;
use worker_a::{start_worker_a, worker_a_until_kill};

mod kill;
use kill::kill;

mod orphan;
use orphan::orphan;

mod ingest;
use ingest::ingest;

mod standby;
use standby::standby;

mod verify;
use verify::verify;

mod workers;

/// The phases of the kill demo, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Locate `dhp` and the page worker.
    Binaries,
    /// Network namespaces (with `--netns`) and the mirror or Wikipedia.
    PageSource,
    /// Dispatch the handoff on host A.
    Dispatch,
    /// Host B's transport server (or announce it down).
    Transport,
    /// Host A's supervisor, until it leads.
    Supervisor,
    /// Worker A fetches pages until the kill point.
    WorkerA,
    /// SIGKILL worker A mid-fetch.
    Kill,
    /// Host A's supervisor orphans the handoff.
    Orphan,
    /// Host B ingests the shipped log.
    Ingest,
    /// The standby on host B resumes and completes.
    Standby,
    /// The dataset, the mirror's counters and the supervisor's report.
    Verify,
}

impl Phase {
    #[allow(dead_code)] // the documented order; `demo_run` follows it
    pub(crate) const ALL: [Phase; 11] = [
        Phase::Binaries,
        Phase::PageSource,
        Phase::Dispatch,
        Phase::Transport,
        Phase::Supervisor,
        Phase::WorkerA,
        Phase::Kill,
        Phase::Orphan,
        Phase::Ingest,
        Phase::Standby,
        Phase::Verify,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Phase::Binaries => "binaries",
            Phase::PageSource => "page-source",
            Phase::Dispatch => "dispatch",
            Phase::Transport => "transport",
            Phase::Supervisor => "supervisor",
            Phase::WorkerA => "worker-a",
            Phase::Kill => "kill",
            Phase::Orphan => "orphan",
            Phase::Ingest => "ingest",
            Phase::Standby => "standby",
            Phase::Verify => "verify",
        }
    }
}

/// Host B's transport server: where it listens (or will), and whether it is up.
struct TransportPlan {
    host: String,
    port: u16,
    addr: String,
    up: bool,
}

/// A running page worker and what it reported.
struct Worker {
    events: Receiver<Value>,
    pid: u32,
    t_spawn: f64,
    pages: BTreeMap<u64, Value>,
    started: bool,
}

/// Worker A at the kill point: the held response (mirror) or the time the
/// fetch of the kill page started (Wikipedia).
struct KillPoint {
    held: Option<mirror::Held>,
    fetch_started: Option<f64>,
}

/// The standby's run on host B.
struct Standby {
    pages: BTreeMap<u64, Value>,
    csv_path: PathBuf,
    t_resume: f64,
    t_complete: f64,
}

/// The run's times, for the closing line.
struct Times {
    kill: f64,
    orphaned: f64,
    ingested: f64,
}

pub(crate) fn demo_run(cx: &mut Ctx, run: &mut Run, titles: Vec<String>, delays: (u64, u64)) -> anyhow::Result<()> {
    let (pages, kill_at) = (cx.args.pages, cx.args.kill_at);
    let source_desc = match cx.args.source {
        Source::Mirror => "offline Wikipedia mirror",
        Source::Wikipedia => "en.wikipedia.org",
    };
    cx.ui.say(&format!(
        "=== DHP kill demo: fetch {pages} pages, kill -9 the worker after page {kill_at}, resume on host B === ({source_desc}, seed {})",
        cx.seed
    ));
    cx.enter(Phase::Binaries);
    binaries(cx)?;
    cx.enter(Phase::PageSource);
    let (base_a, base_b) = page_source(cx, run, &titles, delays)?;
    cx.enter(Phase::Dispatch);
    let (driver_a, hid) = dispatch(cx, &titles)?;
    cx.enter(Phase::Transport);
    let mut plan = transport(cx, run)?;
    cx.enter(Phase::Supervisor);
    supervisor(cx, run, &driver_a)?;
    cx.enter(Phase::WorkerA);
    let mut wa = start_worker_a(cx, run, &hid, base_a, &plan)?;
    let point = worker_a_until_kill(cx, run, &mut wa, &mut plan)?;
    cx.enter(Phase::Kill);
    let t_kill = kill(cx, run, &mut wa, point, &titles)?;
    cx.enter(Phase::Orphan);
    let orphaned = orphan(cx, &driver_a, &hid, t_kill)?;
    cx.enter(Phase::Ingest);
    let (driver_b, ingested) = ingest(cx, run, &hid, wa.pages.len())?;
    cx.enter(Phase::Standby);
    let standby = standby(cx, run, &hid, base_b)?;
    cx.timing("orphan_to_ingest_s", ingested - orphaned);
    cx.timing("orphan_to_resume_s", standby.t_resume - orphaned);
    cx.timing("resume_to_complete_s", standby.t_complete - standby.t_resume);
    cx.timing("kill_to_complete_s", standby.t_complete - t_kill);
    cx.enter(Phase::Verify);
    let times = Times { kill: t_kill, orphaned, ingested };
    verify(cx, run, &driver_b, &hid, &titles, &wa, &standby, &times)
}
