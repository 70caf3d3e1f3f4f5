//! Phase `ingest`: host B ingests the shipped log.

use super::*;

/// Host B ingests what was shipped (it arrives pending, resuming at the kill
/// point); returns host B's runner and when the ingest ended.
pub(super) fn ingest(cx: &mut Ctx, run: &mut Run, hid: &str, a_done: usize) -> anyhow::Result<(Runner, f64)> {
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
