//! Phase `kill`: SIGKILL worker A mid-fetch.

use super::workers::handle_event;
use super::*;

/// SIGKILL worker A mid-fetch; returns the time of the kill.
pub(super) fn kill(
    cx: &mut Ctx,
    run: &mut Run,
    wa: &mut Worker,
    point: KillPoint,
    titles: &[String],
) -> anyhow::Result<f64> {
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
