//! `timeline.svg` of a multi-host round: one lane per host, partitions as
//! bands across the hosts they cut (one colour per side; one-way loss:
//! sender and receiver), and each host's process faults (× SIGKILL,
//! | SIGSTOP), completions (●) and, in a thin row at the foot of its lane,
//! its link faults, full disks and faked clocks. Each host directory has its own
//! detailed timeline (with the partitions as bands across its lanes).

use crate::error::{Error, Result};
use crate::hist::{self, Ev};
use crate::timeline_legend::Sym;
use std::fmt::Write as _;
use std::path::Path;

const LEFT: f64 = 90.0;
const WIDTH: f64 = 1400.0;
/// A host's lane: its marks in the upper part, its link/disk/clock row at the foot.
const LANE: f64 = 64.0;

/// Partition intervals of a history: (start event, heal time).
pub fn partitions(events: &[Ev], t_end: f64) -> Vec<(&Ev, f64)> {
    let mut out = Vec::new();
    let mut open: Option<&Ev> = None;
    for e in events.iter().filter(|e| e.is_chaos() && e.op() == "nemesis") {
        match e.s("phase") {
            Some("start") => open = Some(e),
            Some("heal") => {
                if let Some(s) = open.take() {
                    out.push((s, e.t()));
                }
            }
            _ => {}
        }
    }
    if let Some(s) = open {
        out.push((s, t_end));
    }
    out
}

fn groups(e: &Ev) -> [Vec<u64>; 2] {
    let side = |i: usize| -> Vec<u64> {
        e.get("groups")
            .and_then(|g| g.get(i))
            .and_then(|g| g.as_array())
            .map(|a| a.iter().filter_map(serde_json::Value::as_u64).collect())
            .unwrap_or_default()
    };
    [side(0), side(1)]
}

/// A human description: `h0 | h1,h2` or `h0 → h1 dropped`.
pub fn describe(e: &Ev) -> String {
    let [a, b] = groups(e);
    let names = |v: &[u64]| v.iter().map(|k| format!("h{k}")).collect::<Vec<_>>().join(",");
    match e.s("shape") {
        Some("one-way") => format!("one-way: {} → {} dropped", names(&a), names(&b)),
        s => format!("{}: {} | {}", s.unwrap_or("partition"), names(&a), names(&b)),
    }
}

/// Each host's history, and a standby's on the lane of the host it replaced.
fn host_histories(dir: &Path, n: u32) -> Result<Vec<(u32, hist::History)>> {
    let mut hosts: Vec<(u32, hist::History)> = Vec::new();
    for k in 0..n {
        hosts.push((k, hist::load(&super::host_dir(dir, k).join("history.jsonl"))?));
        let sb = super::standby_dir(dir, k).join("history.jsonl");
        if sb.exists() {
            hosts.push((k, hist::load(&sb)?));
        }
    }
    Ok(hosts)
}

/// The legend's entries: every kind of mark, and only the link/disk/clock
/// kinds some host had.
fn legend_items(hosts: &[(u32, hist::History)]) -> Vec<(Sym, String)> {
    let mut items: Vec<(Sym, String)> = vec![
        (Sym::Bar("#9bd"), "partition: one side".into()),
        (Sym::Bar("#db9"), "the other side (one-way: receiver)".into()),
        (Sym::Bar("#e99"), "one-way: sender".into()),
        (Sym::Glyph("×", "#000"), "SIGKILL".into()),
        (Sym::Glyph("☠", "#000"), "host death (its standby continues on the lane)".into()),
        (Sym::Glyph("|", "#000"), "SIGSTOP".into()),
        (Sym::Glyph("●", "#000"), "complete".into()),
    ];
    for (_, h) in hosts {
        for it in crate::timeline_env::legend(h) {
            if !items.iter().any(|i| i.1 == it.1) {
                items.push(it);
            }
        }
    }
    items
}

/// The picture's coordinates: a time to its x, a host to its lane.
struct Frame {
    t0: f64,
    t_end: f64,
    /// The top of the first lane (below the legend).
    top: f64,
    n: u32,
}

impl Frame {
    fn x(&self, t: f64) -> f64 {
        LEFT + (t - self.t0).clamp(0.0, self.t_end - self.t0) / (self.t_end - self.t0) * WIDTH
    }

    fn lane_y(&self, k: u64) -> f64 {
        self.top + LANE * k as f64
    }

    fn axis_y(&self) -> f64 {
        self.top + LANE * f64::from(self.n)
    }
}

/// Write `DIR/timeline.svg` for the multi-host round in `dir`.
pub fn write(dir: &Path, n: u32) -> Result<()> {
    let net = hist::load(&dir.join(super::NET_HISTORY))?;
    let hosts = host_histories(dir, n)?;
    let t0 = net.events.first().map(Ev::t).unwrap_or(0.0);
    let t_end = net.events.last().map(Ev::t).unwrap_or(t0 + 1.0).max(t0 + 0.001);
    let (legend, legend_h) = crate::timeline_legend::layout(&legend_items(&hosts), 10.0, LEFT + WIDTH - 10.0, 38.0);
    let f = Frame { t0, t_end, top: 38.0 + legend_h, n };
    let height = f.axis_y() + 30.0;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{height}" font-family="monospace" font-size="11">
<rect width="100%" height="100%" fill="white"/>
<text x="10" y="18" font-size="13">dhp-chaos {n} hosts — one lane per host, hover any mark for details; each host directory has its own detailed timeline</text>
{legend}"#,
        w = LEFT + WIDTH + 20.0
    );
    lanes_and_axis(&mut svg, &f);
    partition_bands(&mut svg, &net, &f);
    for (k, h) in &hosts {
        host_marks(&mut svg, &f, *k, h);
    }
    svg.push_str("</svg>\n");
    let out = dir.join("timeline.svg");
    std::fs::write(&out, svg).map_err(Error::io("writing", out))?;
    Ok(())
}

/// One line under each host's lane, named, and the time axis.
fn lanes_and_axis(svg: &mut String, f: &Frame) {
    for k in 0..u64::from(f.n) {
        let y = f.lane_y(k);
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#ccc"/><text x="6" y="{:.1}">h{k}</text>"##,
            y + LANE,
            LEFT + WIDTH,
            y + LANE,
            y + 26.0
        );
    }
    let (top, axis_y) = (f.top, f.axis_y());
    let span = f.t_end - f.t0;
    let step = [0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0]
        .into_iter()
        .find(|s| span / s <= 25.0)
        .unwrap_or(600.0);
    let mut k = 0.0;
    while k <= span {
        let xx = f.x(f.t0 + k);
        let _ = writeln!(
            svg,
            r##"<line x1="{xx:.1}" y1="{top:.1}" x2="{xx:.1}" y2="{axis_y:.1}" stroke="#eee"/><text x="{xx:.1}" y="{:.1}" text-anchor="middle">{k}s</text>"##,
            axis_y + 14.0
        );
        k += step;
    }
}

/// Each partition: a band across the lanes of the hosts it cut, one colour
/// per side (one-way: sender and receiver).
fn partition_bands(svg: &mut String, net: &hist::History, f: &Frame) {
    for (e, heal) in partitions(&net.events, f.t_end) {
        let [a, b] = groups(e);
        let one_way = e.s("shape") == Some("one-way");
        for (side, list) in [(0, a), (1, b)] {
            let fill = match (one_way, side) {
                (true, 0) => "#e99",
                (_, 0) => "#9bd",
                _ => "#db9",
            };
            for k in list {
                let _ = writeln!(
                    svg,
                    r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{fill}" opacity="0.7"><title>partition {} {:.3}s → {:.3}s: {}</title></rect>"#,
                    f.x(e.t()),
                    f.lane_y(k) + 2.0,
                    (f.x(heal) - f.x(e.t())).max(1.0),
                    LANE - 18.0,
                    e.i("fault_id").unwrap_or(0),
                    e.t() - f.t0,
                    heal - f.t0,
                    dhp_markup::html(&describe(e))
                );
            }
        }
    }
}

/// Host `k`'s marks on its lane: process faults and completions, and its
/// link faults, full disks and faked clocks in a thin row at the lane's foot.
fn host_marks(svg: &mut String, f: &Frame, k: u32, h: &hist::History) {
    let y = f.lane_y(u64::from(k));
    let x = |t: f64| f.x(t);
    crate::timeline_env::draw(svg, h, &x, y + LANE - 13.0, f.t0, f.t_end, None);
    for e in &h.events {
        let t = e.t();
        let mark = match (e.is_chaos(), e.op(), e.s("signal"), e.ty()) {
            (true, "fault", Some("KILL"), _) if e.s("kind") == Some("host-death") => "☠",
            (true, "fault", Some("KILL"), _) if e.s("kind") != Some("teardown") => "×",
            (true, "fault", Some("STOP"), _) => "|",
            (false, "complete", _, "ok") => "●",
            _ => continue,
        };
        let what = e.s("kind").or(e.s("hid")).unwrap_or("");
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="12">{mark}<title>h{k} {} {} at {:.3}s</title></text>"#,
            f.x(t),
            y + 30.0,
            // judged text (a worker's `hid`): escaped, cut on a character boundary
            dhp_markup::html(e.op()),
            dhp_markup::html(&what.chars().take(12).collect::<String>()),
            t - f.t0
        );
    }
}
