//! An SVG timeline of a round: per handoff, who owned it (bars, one colour
//! per holder, labelled with the fence), its checkpoints (ticks), faults
//! (× SIGKILL, orange band SIGSTOP→SIGCONT or → the kill of the stopped
//! process, purple × failpoint, dark red × a stopped process killed by a
//! supervisor's watchdog), orphans
//! (◆, ■ for DLQ) and completion (●); on top, the supervisors with the
//! leader highlighted; below the time axis, link faults, full disks and
//! faked clocks (`timeline_env`). Hover any mark for details.

use crate::error::{Error, Result};
use crate::hist::{self, Ev};
use crate::round::Paths;
use crate::timeline_legend::Sym;
use serde_json::Value;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

const LEFT: f64 = 130.0;
const WIDTH: f64 = 1400.0;
const LANE: f64 = 46.0;
const TOP: f64 = 40.0;

// every string from a history (the judged write it) goes through this
use dhp_markup::html as esc;

fn color(name: &str) -> String {
    let mut h: u32 = 2166136261;
    for b in name.bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(16777619);
    }
    format!("hsl({}, 65%, 62%)", h % 360)
}

struct Seg {
    start: f64,
    end: f64,
    label: String,
    holder: String,
}

/// Write `timeline.svg` into the round directory.
pub fn write(dir: &Path) -> Result<()> {
    let paths = Paths::new(dir);
    let bytes = std::fs::read(&paths.meta).map_err(Error::io("reading", &paths.meta))?;
    let meta: Value =
        serde_json::from_slice(&bytes).map_err(|source| Error::Json { path: paths.meta.clone(), source })?;
    let h = hist::load(&paths.history)?;
    let hids: Vec<String> = meta["hids"]
        .as_array()
        .map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect())
        .unwrap_or_default();
    let t0 = meta["t0"].as_f64().unwrap_or_else(|| h.events.first().map(Ev::t).unwrap_or(0.0));
    let t_end =
        meta["t_end"].as_f64().unwrap_or_else(|| h.events.last().map(Ev::t).unwrap_or(t0 + 1.0)).max(t0 + 0.001);
    let x = |t: f64| LEFT + (t - t0).clamp(0.0, t_end - t0) / (t_end - t0) * WIDTH;
    let lane_y = |i: usize| TOP + LANE * (i as f64 + 1.0);
    let hid_lane: HashMap<&str, usize> = hids.iter().enumerate().map(|(i, h)| (h.as_str(), i)).collect();
    let verdicts = crate::timeline_verdicts::lines(dir);
    let base_height = TOP + LANE * (hids.len() as f64 + 1.0) + 60.0;
    let height = base_height + 13.0 * verdicts.len() as f64 + 10.0;

    // the legend, wrapped to the picture's width; everything else below it
    let mut items: Vec<(Sym, String)> = vec![
        (Sym::Bar("hsl(200, 65%, 62%)"), "owner (a colour per holder; label: holder and fence)".into()),
        (Sym::Glyph("▾", "#555"), "owner too short for its label (hover it)".into()),
        (Sym::Tick("#333"), "checkpoint".into()),
        (Sym::Glyph("×", "#d22"), "SIGKILL".into()),
        (Sym::Bar("#f90"), "SIGSTOP (to SIGCONT, or to the stopped process's death)".into()),
        (Sym::Glyph("×", "#a3c"), "failpoint".into()),
        (Sym::Glyph("×", "#822"), "killed while stopped by a supervisor's watchdog".into()),
        (Sym::Glyph("◆", "#000"), "orphan".into()),
        (Sym::Glyph("■", "#000"), "DLQ".into()),
        (Sym::Glyph("●", "#2a2"), "complete".into()),
        (Sym::Bar("#4a7"), "leader".into()),
    ];
    if h.events.iter().any(|e| e.is_chaos() && e.op() == "nemesis") {
        items.push((Sym::Bar("#cde"), "partition".into()));
    }
    if h.events.iter().any(|e| e.is_chaos() && e.s("kind") == Some("db-crash")) {
        items.push((Sym::Bar("#ddd"), "database down".into()));
    }
    if h.events.iter().any(|e| e.is_chaos() && e.s("kind") == Some("db-terminate-backend")) {
        items.push((Sym::Glyph("⌁", "#36c"), "backend terminated".into()));
    }
    items.extend(crate::timeline_env::legend(&h));
    let (legend, legend_h) = crate::timeline_legend::layout(&items, 10.0, LEFT + WIDTH - 10.0, 38.0);
    let dy = 38.0 + legend_h - 10.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{}" font-family="monospace" font-size="11">
<rect width="100%" height="100%" fill="white"/>
<text x="10" y="18" font-size="13">dhp-chaos round {round} seed {seed} — hover any mark for details</text>
{legend}<g transform="translate(0,{dy:.1})">
"#,
        height + dy,
        w = LEFT + WIDTH + 20.0,
        round = meta["config"]["round"],
        seed = meta["config"]["seed"],
    );
    // time axis
    let span = t_end - t0;
    let step = [0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0]
        .into_iter()
        .find(|s| span / s <= 25.0)
        .unwrap_or(600.0);
    let axis_y = TOP + LANE * (hids.len() as f64 + 1.0) + 10.0;
    let mut k = 0.0;
    while k <= span {
        let xx = x(t0 + k);
        let _ = writeln!(
            svg,
            r##"<line x1="{xx:.1}" y1="{TOP}" x2="{xx:.1}" y2="{axis_y}" stroke="#eee"/><text x="{xx:.1}" y="{:.1}" text-anchor="middle">{k}s</text>"##,
            axis_y + 14.0
        );
        k += step;
    }
    // lanes
    let _ = writeln!(
        svg,
        r#"<text x="6" y="{:.1}">supervisors</text><text x="6" y="{:.1}" font-size="9">(leader green)</text>"#,
        TOP + 16.0,
        TOP + 28.0
    );
    for (i, hid) in hids.iter().enumerate() {
        let y = lane_y(i);
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ccc"/><text x="6" y="{:.1}"><title>{}</title>{}</text>"##,
            LEFT + WIDTH,
            y + 24.0,
            esc(hid),
            esc(&hid.chars().take(12).collect::<String>())
        );
    }

    // database outages (db-crash → db-up) across every lane, and terminated backends
    for e in h.events.iter().filter(|e| e.is_chaos() && e.op() == "fault") {
        match e.s("kind") {
            Some("db-crash") => {
                let id = e.u("fault_id");
                let up = h
                    .events
                    .iter()
                    .find(|o| o.is_chaos() && o.s("what") == Some("db-up") && o.u("fault_id") == id)
                    .map_or(t_end, Ev::t);
                let _ = writeln!(
                    svg,
                    r##"<rect class="db-down" x="{:.1}" y="{TOP:.1}" width="{:.1}" height="{:.1}" fill="#888" opacity="0.18"><title>database down {:.3}s → {:.3}s</title></rect>"##,
                    x(e.t()),
                    (x(up) - x(e.t())).max(1.0),
                    LANE * (hids.len() as f64 + 1.0),
                    e.t() - t0,
                    up - t0
                );
            }
            Some("db-terminate-backend") => {
                let y = e.hid().and_then(|hh| hid_lane.get(hh)).map_or(TOP + 12.0, |&l| lane_y(l) + 13.0);
                let _ = writeln!(
                    svg,
                    r##"<text class="db-term" x="{:.1}" y="{y:.1}" fill="#36c" font-size="13" text-anchor="middle">⌁<title>{:.3}s backend {} of {} terminated</title></text>"##,
                    x(e.t()),
                    e.t() - t0,
                    e.i("backend_pid").unwrap_or(0),
                    e.s("victim").unwrap_or("")
                );
            }
            _ => {}
        }
    }

    // process lifetimes (spawn → exit) for the supervisor lane
    let mut spawned: HashMap<String, f64> = HashMap::new();
    let mut exited: HashMap<String, f64> = HashMap::new();
    let mut roles: HashMap<String, String> = HashMap::new();
    for e in h.events.iter().filter(|e| e.is_chaos()) {
        match e.op() {
            "spawn" => {
                if let Some(n) = e.s("name") {
                    spawned.insert(n.into(), e.t());
                    roles.insert(n.into(), e.s("role").unwrap_or("").into());
                }
            }
            "exit" => {
                if let Some(n) = e.s("name") {
                    exited.insert(n.into(), e.t());
                }
            }
            _ => {}
        }
    }
    let sups: Vec<&String> = {
        let mut v: Vec<&String> = roles
            .iter()
            .filter(|(_, r)| r.as_str() == "supervisor" || r.as_str() == "transport")
            .map(|(n, _)| n)
            .collect();
        v.sort_by(|a, b| spawned[*a].total_cmp(&spawned[*b]));
        v
    };
    let sup_h = (LANE - 8.0) / sups.len().max(1) as f64;
    for (i, s) in sups.iter().enumerate() {
        let y = TOP + 4.0 + i as f64 * sup_h;
        let (a, b) = (spawned[*s], exited.get(*s).copied().unwrap_or(t_end));
        let fill = if roles[*s] == "transport" { "#bcd" } else { "#ddd" };
        let _ = writeln!(
            svg,
            r##"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{fill}"><title>{}: {:.3}s → {:.3}s</title></rect>"##,
            x(a),
            (x(b) - x(a)).max(1.0),
            (sup_h - 1.0).max(1.0),
            esc(s),
            a - t0,
            b - t0
        );
    }
    // leader intervals from the monitor
    let mut leader: Option<(String, f64)> = None;
    let mut leader_segs = Vec::new();
    for e in h.events.iter().filter(|e| e.is_chaos() && e.op() == "observe" && e.s("what") == Some("leader")) {
        if let Some((n, s)) = leader.take() {
            leader_segs.push((n, s, e.t()));
        }
        if let Some(n) = e.s("holder") {
            leader = Some((n.into(), e.t()));
        }
    }
    if let Some((n, s)) = leader {
        leader_segs.push((n, s, t_end));
    }
    for (n, a, b) in leader_segs {
        if let Some(i) = sups.iter().position(|s| **s == n) {
            let y = TOP + 4.0 + i as f64 * sup_h;
            let _ = writeln!(
                svg,
                r##"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="#4a7"><title>{} leader {:.3}s → {:.3}s</title></rect>"##,
                x(a),
                (x(b) - x(a)).max(1.0),
                (sup_h - 1.0).max(1.0),
                esc(&n),
                a - t0,
                b - t0
            );
        }
    }

    // kills of supervisors and the transport server, on their rows
    for e in h.events.iter().filter(|e| {
        e.is_chaos() && e.op() == "fault" && e.s("signal") == Some("KILL") && e.s("kind") != Some("teardown")
    }) {
        let Some(v) = e.s("victim") else { continue };
        if let Some(i) = sups.iter().position(|s| s.as_str() == v) {
            let y = TOP + 4.0 + i as f64 * sup_h + sup_h / 2.0 + 4.0;
            let _ = writeln!(
                svg,
                r#"<text x="{:.1}" y="{y:.1}" fill="{}" font-size="12" text-anchor="middle">×<title>{:.3}s {} {}</title></text>"#,
                x(e.t()),
                if e.get("leader").and_then(Value::as_bool) == Some(true) { "#d22" } else { "#a55" },
                e.t() - t0,
                esc(e.s("kind").unwrap_or("")),
                esc(v)
            );
        }
    }

    // ownership segments per handoff
    let mut segs: HashMap<String, Vec<Seg>> = HashMap::new();
    let mut open: HashMap<String, (String, i64, f64)> = HashMap::new(); // hid → (holder, fence, start)
    let close = |segs: &mut HashMap<String, Vec<Seg>>,
                 open: &mut HashMap<String, (String, i64, f64)>,
                 hid: &str,
                 t: f64,
                 holder: Option<&str>| {
        if let Some((hh, f, s)) = open.get(hid).cloned() {
            if holder.is_none_or(|h| h == hh) {
                segs.entry(hid.into()).or_default().push(Seg {
                    start: s,
                    end: t,
                    label: format!("{hh} f{f}"),
                    holder: hh,
                });
                open.remove(hid);
            }
        }
    };
    let mut marks = String::new();
    for e in &h.events {
        let Some(hid) = e.hid() else { continue };
        let Some(&lane) = hid_lane.get(hid) else { continue };
        let y = lane_y(lane);
        let t = e.t();
        if e.is_chaos() {
            match (e.op(), e.s("signal")) {
                ("fault", Some("KILL")) if e.s("kind") != Some("teardown") => {
                    let fp = e.s("kind") == Some("failpoint");
                    let c = if fp { "#a3c" } else { "#d22" };
                    let _ = writeln!(
                        marks,
                        r#"<text x="{:.1}" y="{:.1}" fill="{c}" font-size="15" text-anchor="middle">×<title>{:.3}s {} {} {}</title></text>"#,
                        x(t),
                        y + 13.0,
                        t - t0,
                        esc(e.s("kind").unwrap_or("")),
                        esc(e.s("victim").unwrap_or("")),
                        esc(e.s("failpoint").unwrap_or(""))
                    );
                    close(&mut segs, &mut open, hid, t, e.s("victim"));
                }
                ("fault", Some("STOP")) => {
                    let victim = e.s("victim").unwrap_or("");
                    let after = |op: &str, sig: Option<&str>| {
                        h.events
                            .iter()
                            .find(|c| {
                                c.is_chaos()
                                    && c.op() == op
                                    && (sig.is_none() || c.s("signal") == sig)
                                    && c.t() >= t
                                    && {
                                        if op == "exit" {
                                            c.s("name") == Some(victim)
                                        } else {
                                            c.s("victim") == Some(victim)
                                        }
                                    }
                            })
                            .map(Ev::t)
                    };
                    let cont = after("fault", Some("CONT"));
                    let exit = after("exit", None);
                    // The band ends where the stop ended: SIGCONT, or the
                    // process dying while stopped (only SIGKILL can do that).
                    let (end, how) = match (cont, exit) {
                        (Some(c), Some(x)) if x < c => (x, "killed while stopped"),
                        (Some(c), _) => (c, "SIGCONT"),
                        (None, Some(x)) => (x, "killed while stopped"),
                        (None, None) => (t_end, "end of round"),
                    };
                    let _ = writeln!(
                        marks,
                        r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="6" fill="#f90" opacity="0.8"><title>{} SIGSTOP {:.3}s → {how} {:.3}s</title></rect>"##,
                        x(t),
                        y + 30.0,
                        (x(end) - x(t)).max(1.0),
                        esc(victim),
                        t - t0,
                        end - t0
                    );
                    let by_harness = h.events.iter().any(|k| {
                        k.is_chaos()
                            && k.op() == "fault"
                            && k.s("signal") == Some("KILL")
                            && k.s("victim") == Some(victim)
                            && k.t() >= t
                            && k.t() <= end
                    });
                    if how == "killed while stopped" && !by_harness {
                        // nobody in the history sent it: a supervisor's stalled-writer watchdog did
                        let _ = writeln!(
                            marks,
                            r##"<text x="{:.1}" y="{:.1}" fill="#822" font-size="15" text-anchor="middle" class="killed-while-stopped">×<title>{:.3}s {} SIGKILLed while stopped, not by the harness (a supervisor's stalled-writer watchdog)</title></text>"##,
                            x(end),
                            y + 13.0,
                            end - t0,
                            esc(victim)
                        );
                    }
                }
                _ => {}
            }
            continue;
        }
        match (e.op(), e.ty()) {
            ("claim" | "recover", "ok") => {
                close(&mut segs, &mut open, hid, t, None);
                open.insert(hid.into(), (e.s("holder").unwrap_or(e.process()).into(), e.i("fence").unwrap_or(-1), t));
            }
            ("checkpoint", "ok") => {
                let _ = writeln!(
                    marks,
                    r##"<line x1="{0:.1}" y1="{1:.1}" x2="{0:.1}" y2="{2:.1}" stroke="#333" stroke-width="0.6"><title>seq {3} by {4} fence {5} at {6:.3}s</title></line>"##,
                    x(t),
                    y + 2.0,
                    y + 8.0,
                    e.i("seq").unwrap_or(-1),
                    esc(e.process()),
                    e.i("fence").unwrap_or(-1),
                    t - t0
                );
            }
            ("complete", "ok") => {
                let _ = writeln!(
                    marks,
                    r##"<circle cx="{:.1}" cy="{:.1}" r="5" fill="#2a2"><title>complete by {} at {:.3}s</title></circle>"##,
                    x(t),
                    y + 20.0,
                    esc(e.process()),
                    t - t0
                );
                close(&mut segs, &mut open, hid, t, Some(e.s("holder").unwrap_or(e.process())));
            }
            ("supervise", "ok") => {
                let dlq = e.action() == Some(crate::hist::ActionKind::Dlq);
                let shape = if dlq { "■" } else { "◆" };
                let _ = writeln!(
                    marks,
                    r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">{shape}<title>{} by {} at {:.3}s: {} fence {} → {} ({})</title></text>"#,
                    x(t),
                    y + 42.0,
                    esc(e.s("action").unwrap_or("")),
                    esc(e.process()),
                    t - t0,
                    esc(e.s("previous_holder").unwrap_or("?")),
                    e.i("previous_fence").unwrap_or(-1),
                    e.i("fence").unwrap_or(-1),
                    esc(e.s("reason").unwrap_or(""))
                );
                close(&mut segs, &mut open, hid, t, e.s("previous_holder"));
            }
            _ => {}
        }
    }
    for (hid, (hh, f, s)) in open.drain() {
        let end = h
            .events
            .iter()
            .filter(|e| e.is_chaos() && e.op() == "exit" && e.s("name") == Some(hh.as_str()))
            .map(Ev::t)
            .next()
            .unwrap_or(t_end);
        segs.entry(hid).or_default().push(Seg { start: s, end, label: format!("{hh} f{f}"), holder: hh });
    }
    for (hid, list) in &segs {
        let Some(&lane) = hid_lane.get(hid.as_str()) else { continue };
        let y = lane_y(lane);
        for sg in list {
            let w = (x(sg.end) - x(sg.start)).max(1.0);
            let _ = writeln!(
                svg,
                r#"<rect x="{:.1}" y="{:.1}" width="{w:.1}" height="18" fill="{}" stroke="white" stroke-width="0.5"><title>{} {:.3}s → {:.3}s</title></rect>"#,
                x(sg.start),
                y + 10.0,
                color(&sg.holder),
                esc(&sg.label),
                sg.start - t0,
                sg.end - t0
            );
            // the label if it fits, else the fence alone, else a marker above the bar
            // (the bar's tooltip says it all)
            let fence = sg.label.rsplit(' ').next().unwrap_or("");
            let tip = format!("{} {:.3}s → {:.3}s", sg.label, sg.start - t0, sg.end - t0);
            if w > 7.0 * sg.label.chars().count() as f64 {
                let _ = writeln!(
                    svg,
                    r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
                    x(sg.start) + 2.0,
                    y + 23.0,
                    esc(&sg.label)
                );
            } else if w > 7.0 * fence.chars().count() as f64 + 2.0 {
                let _ = writeln!(
                    svg,
                    r#"<text class="short-label" x="{:.1}" y="{:.1}">{}<title>{}</title></text>"#,
                    x(sg.start) + 1.0,
                    y + 23.0,
                    esc(fence),
                    esc(&tip)
                );
            } else {
                let _ = writeln!(
                    svg,
                    r##"<text class="short-bar" x="{:.1}" y="{:.1}" font-size="10" fill="#555" text-anchor="middle">▾<title>{}</title></text>"##,
                    x(sg.start) + w / 2.0,
                    y + 9.5,
                    esc(&tip)
                );
            }
        }
    }
    // partitions (--hosts): bands across every lane, under the marks
    for (e, heal) in crate::hosts::timeline::partitions(&h.events, t_end) {
        let _ = writeln!(
            svg,
            r##"<rect x="{:.1}" y="{TOP}" width="{:.1}" height="{:.1}" fill="#58a" opacity="0.15"><title>partition {:.3}s → {:.3}s: {}</title></rect><text x="{:.1}" y="{:.1}" font-size="9" fill="#358">partition</text>"##,
            x(e.t()),
            (x(heal) - x(e.t())).max(1.0),
            axis_y - TOP,
            e.t() - t0,
            heal - t0,
            esc(&crate::hosts::timeline::describe(e)),
            x(e.t()) + 1.0,
            TOP - 2.0
        );
    }
    svg.push_str(&marks);
    crate::timeline_env::draw(&mut svg, &h, &x, axis_y + 22.0, t0, t_end, Some("link/disk/clock"));
    crate::timeline_verdicts::draw(&mut svg, &verdicts, base_height + 4.0);
    svg.push_str("</g></svg>\n");
    let out = dir.join("timeline.svg");
    std::fs::write(&out, svg).map_err(Error::io("writing", out))?;
    Ok(())
}
