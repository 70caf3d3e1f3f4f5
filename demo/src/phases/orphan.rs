//! Phase `orphan`: host A's supervisor orphans the handoff.

use super::*;

/// Host A's supervisor orphans the handoff; returns when it did.
pub(super) fn orphan(cx: &mut Ctx, driver_a: &Runner, hid: &str, t_kill: f64) -> anyhow::Result<f64> {
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
