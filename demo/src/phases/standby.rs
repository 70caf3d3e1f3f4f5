//! Phase `standby`: the standby on host B resumes and completes.

use super::workers::{handle_event, start_worker};
use super::*;

/// The standby on host B claims the handoff, resumes at the kill point and completes it.
pub(super) fn standby(cx: &mut Ctx, run: &mut Run, hid: &str, base_b: String) -> anyhow::Result<Standby> {
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
