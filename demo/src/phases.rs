//! The demo's run, one function per phase. [`Phase::ALL`] is the order they
//! run in; the context records the phase in progress, so a failed run's
//! verdict names the phase it failed in (`failed_phase` in `--json`).

use super::*;

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

fn binaries(cx: &mut Ctx) -> anyhow::Result<()> {
    let mut notes = Vec::new();
    cx.dhp =
        procs::locate_dhp(cx.args.dhp.as_deref(), &mut |m| notes.push(m.to_string())).map_err(|e| usage!("{e:#}"))?;
    for n in notes {
        cx.ui.say(&n);
    }
    cx.worker_bin = procs::page_worker_bin().map_err(|e| usage!("{e:#}"))?;
    Ok(())
}

/// Returns the base URL host A and host B fetch from.
fn page_source(cx: &mut Ctx, run: &mut Run, titles: &[String], delays: (u64, u64)) -> anyhow::Result<(String, String)> {
    let (pages, kill_at) = (cx.args.pages, cx.args.kill_at);
    if cx.args.netns {
        let ns = NetNs::create(std::process::id())?;
        cx.ui.say(&format!(
            "netns: host A = {} ({}), host B = {} ({}), veth {}<->{} (/30 only inside the namespaces)",
            ns.ns_a, ns.addr_a, ns.ns_b, ns.addr_b, ns.veth_a, ns.veth_b
        ));
        cx.fact(
            "network",
            json!({"ns_a": ns.ns_a, "ns_b": ns.ns_b, "addr_a": ns.addr_a.to_string(),
                   "addr_b": ns.addr_b.to_string(), "veth_a": ns.veth_a, "veth_b": ns.veth_b}),
        );
        run.netns = Some(ns);
    }
    let (base_a, base_b) = match cx.args.source {
        Source::Mirror => {
            let listeners = match &run.netns {
                Some(ns) => vec![ns.loopback_listener(Host::A)?, ns.loopback_listener(Host::B)?],
                None => vec![Mirror::loopback_listener()?],
            };
            let m = Mirror::start(
                MirrorConfig {
                    seed: cx.seed,
                    titles: titles.to_vec(),
                    min_delay_ms: delays.0,
                    max_delay_ms: delays.1,
                    hold: Some(titles[kill_at].clone()),
                    hold_timeout: cx.phase_timeout(),
                },
                listeners,
            )?;
            let (a, b) = (m.base_url(0), m.base_url(m.addrs().len() - 1));
            cx.ui.say(&format!(
                "mirror: {a}{} ({} pages, {}-{} ms per response{})",
                mirror::SUMMARY_PREFIX,
                pages,
                delays.0,
                delays.1,
                if run.netns.is_some() { format!("; host B sees it at {b}") } else { String::new() }
            ));
            run.mirror = Some(m);
            (a, b)
        }
        Source::Wikipedia => {
            let base = "https://en.wikipedia.org".to_string();
            let f = fetch::Fetcher::new(&base, Duration::from_secs(15));
            f.fetch(&titles[0])
                .map_err(|e| usage!("cannot reach en.wikipedia.org ({e:#}); run offline with --source mirror"))?;
            cx.ui.say("source: https://en.wikipedia.org/api/rest_v1/page/summary/{title} (reachable)");
            (base.clone(), base)
        }
    };
    cx.fact("titles", json!(titles));
    Ok((base_a, base_b))
}

/// Dispatch the page handoff on host A; returns host A's runner and the handoff id.
fn dispatch(cx: &mut Ctx, titles: &[String]) -> anyhow::Result<(Runner, String)> {
    let pages = cx.args.pages;
    let driver_a = Runner::open(&cx.host_a, "demo-driver", cx.cfg.clone())?;
    let source_name = if cx.args.source == Source::Mirror { "mirror" } else { "wikipedia" };
    let budget = Budget { max_steps: pages as i64 + 100, max_spend_usd: 1.0, max_wallclock_s: 3600.0, max_attempts: 5 };
    let env = envelope::build(
        record::KIND,
        pageworker::inputs(titles, source_name, cx.seed),
        pageworker::output_schema(),
        BuildOptions {
            budget: Some(budget.to_value()),
            created_by: Some("dhp-rs kill demo".into()),
            ..Default::default()
        },
    )?;
    let hid = driver_a.dispatch(&env)?;
    cx.fact("handoff_id", json!(hid));
    cx.ui.say(&format!(
        "host A: {} — handoff {} ({}, {pages} titles) dispatched",
        cx.host_a.display(),
        &hid[..12],
        record::KIND
    ));
    Ok((driver_a, hid))
}

/// Start host B's transport server now, or (`--transport-down-s`) plan it
/// for later on a port chosen now.
fn transport(cx: &mut Ctx, run: &mut Run) -> anyhow::Result<TransportPlan> {
    let host = run.netns.as_ref().map(|n| n.addr_b.to_string()).unwrap_or_else(|| "127.0.0.1".into());
    let delayed = cx.args.transport_down_s > 0.0;
    let port = if run.netns.is_some() {
        dhp_core::transport::net::DEFAULT_PORT
    } else if delayed {
        procs::free_port("127.0.0.1")?
    } else {
        0
    };
    let mut addr = format!("{host}:{port}");
    if !delayed {
        addr = start_transport(cx, run, &host, port)?;
    } else {
        cx.ui.say(&format!(
            "host B: transport server DOWN at the start (comes up on {addr} {:.1} s after worker-A starts)",
            cx.args.transport_down_s
        ));
    }
    Ok(TransportPlan { host, port, addr, up: !delayed })
}

fn supervisor(cx: &mut Ctx, run: &mut Run, driver_a: &Runner) -> anyhow::Result<()> {
    let sup_args: Vec<String> =
        vec!["--json".into(), "supervisor".into(), cx.host_a.display().to_string(), "sup-A".into(), "86400".into()];
    let mut cmd = procs::command(&cx.prefix(run, Host::A), &cx.dhp, &sup_args);
    cmd.stdout(std::fs::File::create(cx.host_a.join("supervisor.out"))?)
        .stderr(std::fs::File::create(cx.host_a.join("supervisor.err"))?);
    let sup = Proc::spawn("supervisor", cmd)?;
    let sup_pid = sup.pid;
    run.procs.push(sup);
    wait_leader(cx, run, driver_a, "sup-A")?;
    cx.ui.say(&format!("host A: supervisor sup-A (pid {sup_pid}) is the leader"));
    cx.fact("supervisor_pid", json!(sup_pid));
    Ok(())
}

fn start_worker_a(
    cx: &mut Ctx,
    run: &mut Run,
    hid: &str,
    base_a: String,
    plan: &TransportPlan,
) -> anyhow::Result<Worker> {
    let mut wargs: Vec<String> = vec![
        "--root".into(),
        cx.host_a.display().to_string(),
        "--id".into(),
        "worker-A".into(),
        "--host".into(),
        "A".into(),
        "claim".into(),
        hid.to_string(),
        "--base-url".into(),
        base_a,
        "--ship-tcp".into(),
        plan.addr.clone(),
        "--ship-buffer".into(),
        cx.host_a.join("ship-buffer").join(format!("{hid}.log")).display().to_string(),
        "--out".into(),
        cx.host_a.join("dataset").join("wiki-pages.csv").display().to_string(),
    ];
    if cx.args.source == Source::Mirror {
        wargs.extend(["--fetch-tries".into(), "1".into()]);
    }
    let (events, pid) = start_worker(cx, run, Host::A, "worker-A", &wargs)?;
    let t_spawn = now();
    cx.fact("worker_a_pid", json!(pid));
    Ok(Worker { events, pid, t_spawn, pages: BTreeMap::new(), started: false })
}

/// Worker A works until the kill point: the mirror holds the response of
/// page `kill_at + 1` (or, from Wikipedia, its fetch started). A delayed
/// transport server is started on time meanwhile.
fn worker_a_until_kill(
    cx: &mut Ctx,
    run: &mut Run,
    wa: &mut Worker,
    plan: &mut TransportPlan,
) -> anyhow::Result<KillPoint> {
    let (pages, kill_at) = (cx.args.pages, cx.args.kill_at);
    let deadline = Instant::now() + cx.phase_timeout();
    let mut fetch_started = None;
    let held = loop {
        check_interrupt()?;
        if !plan.up && now() - wa.t_spawn >= cx.args.transport_down_s {
            let done = wa.pages.len();
            let got = start_transport(cx, run, &plan.host, plan.port)?;
            anyhow::ensure!(got == plan.addr, "transport came up on {got}, not {}", plan.addr);
            plan.up = true;
            cx.fact("transport_started_after_worker_s", json!(now() - wa.t_spawn));
            cx.fact("pages_done_when_transport_started", json!(done));
        }
        match wa.events.recv_timeout(Duration::from_millis(2)) {
            Ok(ev) => {
                handle_event(cx, "worker-A", &ev, pages, &mut wa.pages, &mut wa.started)?;
                if ev["event"] == "start" {
                    cx.fact(
                        "worker_a_start",
                        json!({"t": ev["t"], "peer_wait_s": ev["peer_wait_s"], "peer_acked_seq": ev["peer_acked_seq"],
                               "reshipped": ev["reshipped"], "fence": ev["fence"], "attempt": ev["attempt"]}),
                    );
                }
                if ev["event"] == "fetch_start" && ev["index"].as_u64() == Some(kill_at as u64) {
                    fetch_started = ev["t"].as_f64();
                    if cx.args.source == Source::Wikipedia {
                        break None;
                    }
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                let st = run.proc_mut("worker-A").and_then(|p| p.wait_for(Duration::from_secs(2)));
                anyhow::bail!(
                    "worker-A exited ({}) before reaching the kill point at page {}: {}",
                    st.map(|s| s.to_string()).unwrap_or_else(|| "still running".into()),
                    kill_at + 1,
                    tail(&cx.host_a.join("worker-A.err"), 3)
                );
            }
        }
        if let Some(h) = run.mirror.as_ref().and_then(|m| m.wait_held(Duration::ZERO)) {
            break Some(h);
        }
        anyhow::ensure!(Instant::now() < deadline, "worker-A did not reach page {} in time", kill_at + 1);
    };
    Ok(KillPoint { held, fetch_started })
}

/// SIGKILL worker A mid-fetch; returns the time of the kill.
fn kill(cx: &mut Ctx, run: &mut Run, wa: &mut Worker, point: KillPoint, titles: &[String]) -> anyhow::Result<f64> {
    let (pages, kill_at) = (cx.args.pages, cx.args.kill_at);
    let kill_title = &titles[kill_at];
    let t_kill = now();
    let proc_a = run.proc_mut("worker-A").ok_or_else(|| anyhow::anyhow!("worker-A is not running"))?;
    proc_a.signal(Signal::SIGKILL).map_err(|e| anyhow::anyhow!("kill -9 worker-A: {e}"))?;
    let status =
        proc_a.wait_for(Duration::from_secs(10)).ok_or_else(|| anyhow::anyhow!("worker-A survived SIGKILL"))?;
    anyhow::ensure!(status.signal() == Some(9), "worker-A ended with {status}, not by SIGKILL");
    // Drain what worker-A said before it died.
    while let Ok(ev) = wa.events.recv_timeout(Duration::from_secs(2)) {
        handle_event(cx, "worker-A", &ev, pages, &mut wa.pages, &mut wa.started)?;
    }
    let answered_before_kill = run.mirror.as_ref().and_then(|m| m.held_answered_at()).is_some_and(|t| t <= t_kill);
    if let Some(m) = &run.mirror {
        m.release_hold();
    }
    let a_done = wa.pages.len();
    anyhow::ensure!(a_done == kill_at, "worker-A had finished {a_done} pages at the kill, expected {kill_at}");
    let mid = match (&point.held, point.fetch_started) {
        (Some(h), _) => {
            anyhow::ensure!(!answered_before_kill, "the mirror had answered page {} before the kill", kill_at + 1);
            format!(
                "mid-fetch of page {} \"{}\": request in flight for {}, response held by the mirror",
                kill_at + 1,
                titles::display(kill_title),
                fmt_s(t_kill - h.at)
            )
        }
        (None, Some(t)) => format!(
            "mid-fetch of page {} \"{}\", {} after the request started",
            kill_at + 1,
            titles::display(kill_title),
            fmt_s(t_kill - t)
        ),
        (None, None) => anyhow::bail!("the kill point was reached without a fetch of page {}", kill_at + 1),
    };
    let pid_a = wa.pid;
    cx.ui.finish_bar();
    cx.ui.say(&cx.ui.color("1;33", &format!("*** kill -9 worker-A (pid {pid_a}) at {kill_at} pages — {mid} ***")));
    cx.fact(
        "kill",
        json!({"at": t_kill, "pid": pid_a, "signal": "SIGKILL", "pages_done": a_done,
                           "mid_fetch_page": kill_at + 1, "title": kill_title,
                           "request_in_flight_s": point.held.as_ref().map(|h| t_kill - h.at)}),
    );
    cx.timing("worker_a_run_s", t_kill - wa.t_spawn);
    Ok(t_kill)
}

/// Host A's supervisor orphans the handoff; returns when it did.
fn orphan(cx: &mut Ctx, driver_a: &Runner, hid: &str, t_kill: f64) -> anyhow::Result<f64> {
    let kill_at = cx.args.kill_at;
    let deadline = Instant::now()
        + dhp_core::config::duration_from_secs(
            "orphan deadline",
            cx.cfg.lease_ttl_s() + 2.0 * cx.cfg.supervisor_scan_s + 30.0,
            f64::MAX,
        )?;
    let (orphaned_at, reason) = loop {
        check_interrupt()?;
        let e = driver_a.envelope_bare(hid)?;
        match envelope::status(&e) {
            "orphaned" => {
                let at = e.pointer("/execution/orphaned_at").and_then(dhp_core::json::as_f64).unwrap_or_else(now);
                let reason = e.pointer("/execution/orphan_reason").and_then(Value::as_str).unwrap_or("?").to_string();
                break (at, reason);
            }
            "running" => {}
            other => anyhow::bail!("host A's handoff went to {other} instead of orphaned"),
        }
        anyhow::ensure!(Instant::now() < deadline, "host A's supervisor did not orphan the handoff in time");
        std::thread::sleep(Duration::from_millis(1));
    };
    let kill_to_orphan = orphaned_at - t_kill;
    let own = driver_a.ownership(hid)?;
    let why = match reason.as_str() {
        "worker-died" => format!(
            "worker-died: liveness token dropped; the lease alone would have taken {:.1} s",
            cx.cfg.lease_ttl_s()
        ),
        other => other.to_string(),
    };
    cx.ui.say(&format!("supervisor orphaned after {} ({why})", fmt_s(kill_to_orphan)));
    cx.timing("kill_to_orphan_s", kill_to_orphan);
    cx.fact(
        "orphan",
        json!({"reason": reason, "at": orphaned_at, "fence": own.as_ref().map(|o| o.fence),
               "holder": own.map(|o| o.holder)}),
    );
    let last_a = driver_a.last_checkpoint(hid)?.unwrap_or(Value::Null);
    let a_next = last_a["next"].as_u64().unwrap_or(0);
    anyhow::ensure!(a_next == kill_at as u64, "host A's last checkpoint says next={a_next}, expected {kill_at}");
    Ok(orphaned_at)
}

/// Host B ingests what was shipped (it arrives pending, resuming at the kill
/// point); returns host B's runner and when the ingest ended.
fn ingest(cx: &mut Ctx, run: &mut Run, hid: &str, a_done: usize) -> anyhow::Result<(Runner, f64)> {
    let kill_at = cx.args.kill_at;
    let log_b = dhp_core::transport::log::log_path(&cx.host_b.join("transport"), hid)?;
    anyhow::ensure!(log_b.is_file(), "host B has no transport log for the handoff ({})", log_b.display());
    let ingest_args: Vec<String> = vec![
        "--json".into(),
        "ingest".into(),
        "--create".into(),
        cx.host_b.display().to_string(),
        log_b.display().to_string(),
    ];
    let t_ingest0 = now();
    let out = procs::command(&cx.prefix(run, Host::B), &cx.dhp, &ingest_args).stderr(Stdio::piped()).output()?;
    let t_ingest = now();
    anyhow::ensure!(
        out.status.success(),
        "dhp ingest failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
    let rep: Value = serde_json::from_slice(&out.stdout)?;
    let rep = rep["reports"][0].clone();
    let (n_ing, n_skip, max_seq) = (
        rep["checkpoints_ingested"].as_u64().unwrap_or(0),
        rep["lines_skipped"].as_u64().unwrap_or(0),
        rep["max_seq"].as_i64().unwrap_or(-1),
    );
    let gaps = rep["gaps"].as_array().map(Vec::len).unwrap_or(0);
    cx.ui.say(&format!(
        "host B ingested: {n_ing} checkpoints, {n_skip} skipped (seq 0–{max_seq}, {}; arrives {})",
        if gaps == 0 { "no gaps".to_string() } else { format!("{gaps} GAPS") },
        if rep["created"] == json!(true) { "pending" } else { "into an existing handoff" }
    ));
    cx.fact("ingest", rep.clone());
    cx.timing("ingest_s", t_ingest - t_ingest0);
    anyhow::ensure!(
        max_seq == kill_at as i64 - 1 && gaps == 0 && n_skip == 0,
        "host B's shipped log holds seq 0–{max_seq} ({gaps} gaps, {n_skip} skipped); expected exactly 0–{}",
        kill_at - 1
    );
    let driver_b = Runner::open(&cx.host_b, "demo-driver", cx.cfg.clone())?;
    let st_b = driver_b.status(hid)?;
    anyhow::ensure!(st_b["status"] == "pending", "ingested handoff is {} on host B, not pending", st_b["status"]);
    let last_b = driver_b.last_checkpoint(hid)?.unwrap_or(Value::Null);
    let b_next = last_b["next"].as_u64().unwrap_or(0);
    cx.ui.say(&format!("host B resumes from page {b_next} (worker-A died at {a_done})"));
    anyhow::ensure!(b_next == kill_at as u64, "host B's last checkpoint says next={b_next}, expected {kill_at}");
    Ok((driver_b, t_ingest))
}

/// The standby on host B claims the handoff, resumes at the kill point and completes it.
fn standby(cx: &mut Ctx, run: &mut Run, hid: &str, base_b: String) -> anyhow::Result<Standby> {
    let (pages, kill_at) = (cx.args.pages, cx.args.kill_at);
    let csv_path = cx.host_b.join("dataset").join("wiki-pages.csv");
    let wargs: Vec<String> = vec![
        "--root".into(),
        cx.host_b.display().to_string(),
        "--id".into(),
        "worker-B".into(),
        "--host".into(),
        "B".into(),
        "claim".into(),
        hid.to_string(),
        "--base-url".into(),
        base_b,
        "--out".into(),
        csv_path.display().to_string(),
    ];
    let (events_b, pid_b) = start_worker(cx, run, Host::B, "worker-B", &wargs)?;
    cx.fact("worker_b_pid", json!(pid_b));
    let mut b_pages: BTreeMap<u64, Value> = BTreeMap::new();
    let mut b_started = false;
    let mut resumed: Option<(f64, u64)> = None;
    let mut completed: Option<Value> = None;
    let deadline = Instant::now() + cx.phase_timeout();
    loop {
        check_interrupt()?;
        match events_b.recv_timeout(Duration::from_millis(5)) {
            Ok(ev) => {
                if ev["event"] == "start" {
                    cx.fact(
                        "worker_b_start",
                        json!({"t": ev["t"], "resume_index": ev["resume_index"], "fence": ev["fence"],
                               "attempt": ev["attempt"], "mode": ev["mode"]}),
                    );
                    resumed =
                        Some((ev["t"].as_f64().unwrap_or_else(now), ev["resume_index"].as_u64().unwrap_or(u64::MAX)));
                }
                if ev["event"] == "complete" {
                    completed = Some(ev.clone());
                }
                handle_event(cx, "worker-B", &ev, pages, &mut b_pages, &mut b_started)?;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        anyhow::ensure!(Instant::now() < deadline, "worker-B did not finish in time");
    }
    let status = run
        .proc_mut("worker-B")
        .and_then(|p| p.wait_for(Duration::from_secs(10)))
        .ok_or_else(|| anyhow::anyhow!("worker-B did not exit"))?;
    anyhow::ensure!(status.success(), "worker-B failed ({status}): {}", tail(&cx.host_b.join("worker-B.err"), 3));
    let (t_resume, resume_index) = resumed.ok_or_else(|| anyhow::anyhow!("worker-B never reported its start"))?;
    anyhow::ensure!(resume_index == kill_at as u64, "worker-B resumed at index {resume_index}, expected {kill_at}");
    let completed = completed.ok_or_else(|| anyhow::anyhow!("worker-B exited without completing"))?;
    let t_complete = completed["t"].as_f64().unwrap_or_else(now);
    Ok(Standby { pages: b_pages, csv_path, t_resume, t_complete })
}

/// The verdict: the dataset against the result and the mirror, no page
/// fetched twice, the mirror's request counts, the supervisor's own report.
#[allow(clippy::too_many_arguments)]
fn verify(
    cx: &mut Ctx,
    run: &mut Run,
    driver_b: &Runner,
    hid: &str,
    titles: &[String],
    wa: &Worker,
    standby: &Standby,
    times: &Times,
) -> anyhow::Result<()> {
    let (pages, kill_at) = (cx.args.pages, cx.args.kill_at);
    let (a_pages, b_pages, csv_path) = (&wa.pages, &standby.pages, &standby.csv_path);
    let st_b = driver_b.status(hid)?;
    anyhow::ensure!(st_b["status"] == "completed", "host B's handoff is {}, not completed", st_b["status"]);
    let result = st_b["result"].clone();
    let records = record::read_csv(csv_path)?;
    let csv_bytes = std::fs::read(csv_path)?;
    let csv_sha = dhp_core::json::sha256_hex(&csv_bytes);
    anyhow::ensure!(
        result["dataset_sha256"] == json!(csv_sha),
        "the dataset on disk does not match the completed result"
    );
    let mut problems = check_records(&records, titles, kill_at);
    if run.mirror.is_some() {
        for r in &records {
            let body = mirror::page_body(cx.seed, &r.title);
            if r.bytes != body.len() as u64 || r.sha256 != dhp_core::json::sha256_hex(&body) {
                problems.push(format!(
                    "page {} ({}): bytes/sha256 differ from what the mirror serves",
                    r.index + 1,
                    r.title
                ));
            }
        }
    }
    // Pages completed twice (from the workers' own reports).
    let refetched: Vec<u64> = a_pages.keys().filter(|k| b_pages.contains_key(k)).copied().collect();
    if !refetched.is_empty() {
        problems.push(format!("pages fetched by both workers: {refetched:?}"));
    }
    let ok_pages = records.iter().filter(|r| r.http_status == 200 && r.bytes > 0).count();
    cx.fact("dataset", json!({"path": csv_path, "rows": records.len(), "sha256": csv_sha, "fetched_ok": ok_pages}));
    cx.fact("result", result.clone());
    cx.fact("refetched", json!(refetched));
    cx.fact("worker_a_pages", json!(a_pages.len()));
    cx.fact("worker_b_pages", json!(b_pages.len()));
    cx.fact("completed_pages", json!(records.len()));

    if let Some(m) = &run.mirror {
        let counts = m.counts();
        let (lines, bad) = describe_counts(&counts, titles, kill_at);
        for l in &lines {
            cx.ui.say(l);
        }
        problems.extend(bad);
        let in_order: Vec<u64> = titles.iter().map(|t| counts.get(t).copied().unwrap_or(0)).collect();
        cx.fact("mirror_counts", json!(in_order));
        cx.fact("mirror_unknown_requests", json!(m.unknown_requests()));
        if m.unknown_requests() > 0 {
            problems.push(format!("{} requests for pages the task does not list", m.unknown_requests()));
        }
    } else {
        cx.ui
            .say("(request counts can only be verified with --source mirror; worker reports: every page fetched once)");
    }
    supervisor_report(cx, run, hid, &mut problems)?;

    anyhow::ensure!(problems.is_empty(), "{}", problems.join("; "));
    anyhow::ensure!(records.len() == pages, "dataset has {} rows, expected {pages}", records.len());
    anyhow::ensure!(result["pages"] == json!(pages), "result reports {} pages", result["pages"]);
    cx.ui.say(&format!(
        "=== DONE: {}/{pages} pages, {ok_pages} fetched OK, {} ===",
        records.len(),
        if refetched.is_empty() { "zero refetched".to_string() } else { format!("{} REFETCHED", refetched.len()) }
    ));
    // The path only when the dataset outlives the run (--keep); a temp
    // run directory is deleted on exit.
    let where_ = if cx.args.keep.is_some() { format!("{}, ", csv_path.display()) } else { String::new() };
    cx.ui.say(&format!("dataset: {where_}{} rows, sha256 {}", records.len(), &csv_sha[..16]));
    cx.ui.say(&format!(
        "timing: kill → orphan {} · orphan → ingest {} · orphan → resume {} · resume → complete {} · total {}",
        fmt_s(times.orphaned - times.kill),
        fmt_s(times.ingested - times.orphaned),
        fmt_s(standby.t_resume - times.orphaned),
        fmt_s(standby.t_complete - standby.t_resume),
        fmt_s(now() - cx.t0)
    ));
    if cx.args.keep.is_some() {
        cx.ui.say(&format!("data kept in {}", cx.dir.display()));
    } else {
        cx.ui
            .say("(the run directory was temporary and is removed now; --keep DIR keeps the stores, logs and dataset)");
    }
    Ok(())
}

/// What the supervisor itself reports (it must list the orphan from
/// worker-A); the veth counters and the transport server's closing line.
fn supervisor_report(cx: &mut Ctx, run: &mut Run, hid: &str, problems: &mut Vec<String>) -> anyhow::Result<()> {
    let sup = run.proc_mut("supervisor").ok_or_else(|| anyhow::anyhow!("the supervisor is not running"))?;
    let sup_status = sup.stop(Duration::from_secs(10));
    let sup_out: Value = std::fs::read_to_string(cx.host_a.join("supervisor.out"))
        .ok()
        .and_then(|t| t.lines().rev().find_map(|l| serde_json::from_str(l).ok()))
        .unwrap_or(Value::Null);
    let sup_orphan = sup_out["actions"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["action"] == "orphaned" && x["hid"] == json!(hid)).cloned());
    match &sup_orphan {
        Some(a) if a["previous_holder"] == "worker-A" => {}
        Some(a) => problems.push(format!("the supervisor orphaned it from {}, not worker-A", a["previous_holder"])),
        None => problems.push(format!("the supervisor's report lists no orphan of the handoff (exit {sup_status:?})")),
    }
    cx.fact("supervisor_actions", sup_out["actions"].clone());
    if let Some(ns) = &run.netns {
        if let Some((txp, txb, rxp, rxb)) = ns.veth_a_stats() {
            cx.ui.say(&format!(
                "veth {} (host A side): sent {txp} packets / {txb} bytes, received {rxp} packets / {rxb} bytes",
                ns.veth_a
            ));
            cx.fact("veth_a", json!({"tx_packets": txp, "tx_bytes": txb, "rx_packets": rxp, "rx_bytes": rxb}));
        }
    }
    if let Some(t) = run.proc_mut("transport") {
        t.stop(Duration::from_secs(10));
        let mut last = None;
        if let Some(rx) = cx.transport_lines.take() {
            while let Ok(l) = rx.recv_timeout(Duration::from_secs(2)) {
                last = Some(l);
            }
        }
        if let Some(stats) = last.filter(|l| l.contains("stopped")) {
            cx.ui.say(&format!("host B {}", stats.trim_start_matches("dhp ")));
            cx.fact("transport_stats", json!(stats));
        }
    }
    Ok(())
}

/// Start `dhp transport` on host B and wait for its listening line.
/// Returns `HOST:PORT` as the server reports it.
fn start_transport(cx: &mut Ctx, run: &mut Run, host: &str, port: u16) -> anyhow::Result<String> {
    let args: Vec<String> = vec![
        "transport".into(),
        cx.host_b.join("transport").display().to_string(),
        "--host".into(),
        host.to_string(),
        "--port".into(),
        port.to_string(),
    ];
    let mut cmd = procs::command(&cx.prefix(run, Host::B), &cx.dhp, &args);
    cmd.env("DHP_TRANSPORT_TOKEN", &cx.token)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(cx.host_b.join("transport.err"))?);
    let mut p = Proc::spawn("transport", cmd)?;
    let lines = pump_lines(
        p.child.stdout.take().ok_or_else(|| anyhow::anyhow!("{}: no stdout pipe", p.name))?,
        cx.host_b.join("transport.out"),
    );
    let pid = p.pid;
    run.procs.push(p);
    let deadline = Instant::now() + Duration::from_secs(20);
    let addr = loop {
        check_interrupt()?;
        match lines.recv_timeout(Duration::from_millis(20)) {
            Ok(l) => {
                if let Some(rest) = l.split("listening on ").nth(1) {
                    break rest.split(',').next().unwrap_or("").trim().to_string();
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                anyhow::bail!("dhp transport exited before listening: {}", tail(&cx.host_b.join("transport.err"), 3))
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        anyhow::ensure!(Instant::now() < deadline, "dhp transport did not start listening");
    };
    cx.transport_lines = Some(lines);
    cx.ui.say(&format!(
        "host B: {} — transport server (pid {pid}) listening on {addr}, logs -> host-b/transport/",
        cx.host_b.display()
    ));
    cx.fact("transport", json!({"pid": pid, "addr": addr}));
    Ok(addr)
}

fn start_worker(
    cx: &mut Ctx,
    run: &mut Run,
    h: Host,
    name: &str,
    args: &[String],
) -> anyhow::Result<(Receiver<Value>, u32)> {
    let root = if h == Host::A { &cx.host_a } else { &cx.host_b };
    let mut cmd = procs::command(&cx.prefix(run, h), &cx.worker_bin, args);
    cmd.env("DHP_TRANSPORT_TOKEN", &cx.token)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(root.join(format!("{name}.err")))?);
    let mut p = Proc::spawn(name, cmd)?;
    let rx = pump_events(name, p.child.stdout.take().ok_or_else(|| anyhow::anyhow!("{}: no stdout pipe", p.name))?);
    let pid = p.pid;
    run.procs.push(p);
    cx.ui.say(&format!("{name} started (pid {pid})"));
    Ok((rx, pid))
}

fn wait_leader(cx: &mut Ctx, run: &mut Run, driver: &Runner, id: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        check_interrupt()?;
        let l = dhp_core::store::with_tx(driver.store().as_ref(), dhp_core::store::Mode::Read, |tx| tx.leadership())?;
        if l.is_some_and(|l| l.holder == id && l.expires_at > now()) {
            return Ok(());
        }
        if let Some(s) = run.proc_mut("supervisor").and_then(|p| p.try_status()) {
            anyhow::bail!("dhp supervisor exited ({s}): {}", tail(&cx.host_a.join("supervisor.err"), 3));
        }
        anyhow::ensure!(Instant::now() < deadline, "the supervisor did not become leader");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Show one worker event; pages go into `seen` (index → event).
fn handle_event(
    cx: &mut Ctx,
    name: &str,
    ev: &Value,
    total: usize,
    seen: &mut BTreeMap<u64, Value>,
    started: &mut bool,
) -> anyhow::Result<()> {
    match ev["event"].as_str().unwrap_or("") {
        "claimed" => {}
        "start" => {
            *started = true;
            let peer = match (ev["peer_acked_seq"].as_i64(), ev["peer_wait_s"].as_f64()) {
                // A fresh handoff: the server holds nothing yet (ack_seq -1).
                (Some(s), Some(w)) if s < 0 => {
                    format!(", host B holds no checkpoint yet (its server answered in {})", fmt_s(w))
                }
                (Some(s), Some(w)) => format!(", host B holds seq 0–{s} (caught up in {})", fmt_s(w)),
                _ => String::new(),
            };
            cx.ui.say(&format!(
                "  {name}: {} handoff, fence {}, attempt {}, starts at page {} of {total}{peer}",
                ev["mode"].as_str().unwrap_or("?"),
                ev["fence"],
                ev["attempt"],
                ev["resume_index"].as_u64().unwrap_or(0) + 1
            ));
        }
        "page" => {
            let i = ev["index"].as_u64().unwrap_or(0);
            seen.insert(i, ev.clone());
            let done = ev["done"].as_u64().unwrap_or(0) as usize;
            let shipped = match ev["shipped"].as_i64() {
                Some(s) => format!(" · ckpt {s} acked by B"),
                None => format!(" · ckpt {}", ev["seq"]),
            };
            let title: String = titles::display(ev["title"].as_str().unwrap_or("")).chars().take(32).collect();
            let line = format!("  {name} {done:>3}/{total} {title:<32} {:>6} B{shipped}", ev["bytes"]);
            // The bar's message stays short enough for an 80-column terminal.
            let msg = format!("{}{shipped}", title.chars().take(24).collect::<String>());
            let milestone = done % 10 == 0 || done == total || done == cx.args.kill_at;
            cx.ui.progress(name, done as u64, total as u64, &msg, &line, milestone);
        }
        "fetch_retry" => {
            cx.ui.say(&format!("  {name}: retrying page {}: {}", ev["index"].as_u64().unwrap_or(0) + 1, ev["error"]))
        }
        "complete" => {
            cx.ui.finish_bar();
            cx.ui.say(&format!(
                "  {name}: completed — {} pages, {} fetched this run, resumed from page {}",
                ev["result"]["pages"],
                ev["result"]["fetched_this_run"],
                ev["result"]["resumed_from"].as_u64().unwrap_or(0) + 1
            ))
        }
        "error" => anyhow::bail!("{name} failed: {}", ev["error"].as_str().unwrap_or("?")),
        "raw" => cx.ui.say(&format!("  {name}: {}", ev["line"].as_str().unwrap_or(""))),
        _ => {}
    }
    Ok(())
}
