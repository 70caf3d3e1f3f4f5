//! Phase `dispatch`: dispatch the handoff on host A.

use super::*;

/// Dispatch the page handoff on host A; returns host A's runner and the handoff id.
pub(super) fn dispatch(cx: &mut Ctx, titles: &[String]) -> anyhow::Result<(Runner, String)> {
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
