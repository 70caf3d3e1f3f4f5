//! Page workers, as the `worker-a` and `standby` phases run them: starting
//! one, and showing its events.

use super::*;

pub(super) fn start_worker(
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

/// Show one worker event; pages go into `seen` (index → event).
pub(super) fn handle_event(
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
