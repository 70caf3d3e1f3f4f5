//! Phase `verify`: the dataset, the mirror's counters and the supervisor's
//! report.

use super::*;

/// The verdict: the dataset against the result and the mirror, no page
/// fetched twice, the mirror's request counts, the supervisor's own report.
#[allow(clippy::too_many_arguments)]
pub(super) fn verify(
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
