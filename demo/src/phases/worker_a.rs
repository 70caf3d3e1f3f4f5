//! Phase `worker-a`: worker A fetches pages until the kill point.

use super::transport::start_transport;
use super::workers::{handle_event, start_worker};
use super::*;

pub(super) fn start_worker_a(
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
pub(super) fn worker_a_until_kill(
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
