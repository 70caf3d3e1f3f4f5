//! An SVG timeline of a round: per handoff, who owned it (bars, one colour
//! per holder, labelled with the fence), its checkpoints (ticks), faults
//! (× SIGKILL, orange band SIGSTOP→SIGCONT or → the kill of the stopped
//! process, purple × failpoint, dark red × a stopped process killed by a
//! supervisor's watchdog), orphans
//! (◆, ■ for DLQ) and completion (●); on top, the supervisors with the
//! leader highlighted; below the time axis, link faults, full disks and
//! faked clocks (`timeline_env`). Hover any mark for details.
//!
//! Drawn by section, in this order: the frame (legend, time axis, lanes),
//! database outages, the supervisors' row (`supervisors`), the owners'
//! bars (`owners`), partitions, then the handoffs' marks over them.

mod owners;
mod supervisors;

use crate::error::{Error, Result};
use crate::hist::{self, Ev, History};
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

/// The picture's coordinates: a time to its x, a handoff to its lane.
struct Frame<'a> {
    t0: f64,
    t_end: f64,
    hids: &'a [String],
    hid_lane: HashMap<&'a str, usize>,
}

impl<'a> Frame<'a> {
    fn new(meta: &Value, h: &History, hids: &'a [String]) -> Self {
        let t0 = meta["t0"].as_f64().unwrap_or_else(|| h.events.first().map(Ev::t).unwrap_or(0.0));
        let t_end =
            meta["t_end"].as_f64().unwrap_or_else(|| h.events.last().map(Ev::t).unwrap_or(t0 + 1.0)).max(t0 + 0.001);
        let hid_lane = hids.iter().enumerate().map(|(i, h)| (h.as_str(), i)).collect();
        Frame { t0, t_end, hids, hid_lane }
    }

    fn x(&self, t: f64) -> f64 {
        LEFT + (t - self.t0).clamp(0.0, self.t_end - self.t0) / (self.t_end - self.t0) * WIDTH
    }

    fn lane_y(&self, i: usize) -> f64 {
        TOP + LANE * (i as f64 + 1.0)
    }

    fn lane_of(&self, hid: &str) -> Option<usize> {
        self.hid_lane.get(hid).copied()
    }

    /// The height of the supervisors' row and the handoffs' lanes.
    fn lanes_height(&self) -> f64 {
        LANE * (self.hids.len() as f64 + 1.0)
    }

    fn axis_y(&self) -> f64 {
        TOP + self.lanes_height() + 10.0
    }
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
    let f = Frame::new(&meta, &h, &hids);
    let verdicts = crate::timeline_verdicts::lines(dir);
    let base_height = TOP + f.lanes_height() + 60.0;
    let height = base_height + 13.0 * verdicts.len() as f64 + 10.0;

    let mut svg = header(&meta, &h, height);
    axis(&mut svg, &f);
    lanes(&mut svg, &f);
    db_faults(&mut svg, &h, &f);
    supervisors::draw(&mut svg, &h, &f);
    let marks = owners::draw(&mut svg, &h, &f);
    partitions(&mut svg, &h, &f);
    svg.push_str(&marks);
    let x = |t: f64| f.x(t);
    crate::timeline_env::draw(&mut svg, &h, &x, f.axis_y() + 22.0, f.t0, f.t_end, Some("link/disk/clock"));
    crate::timeline_verdicts::draw(&mut svg, &verdicts, base_height + 4.0);
    svg.push_str("</g></svg>\n");
    let out = dir.join("timeline.svg");
    std::fs::write(&out, svg).map_err(Error::io("writing", out))?;
    Ok(())
}

/// The legend's entries: every kind of mark, and the optional ones this
/// history has.
fn legend_items(h: &History) -> Vec<(Sym, String)> {
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
    items.extend(crate::timeline_env::legend(h));
    items
}

/// The opening of the picture: its title and the legend, wrapped to the
/// picture's width, and the group everything else is drawn in, below it.
fn header(meta: &Value, h: &History, height: f64) -> String {
    let (legend, legend_h) = crate::timeline_legend::layout(&legend_items(h), 10.0, LEFT + WIDTH - 10.0, 38.0);
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
    svg
}

/// The time axis: a grid line and its label every step.
fn axis(svg: &mut String, f: &Frame<'_>) {
    let span = f.t_end - f.t0;
    let step = [0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0]
        .into_iter()
        .find(|s| span / s <= 25.0)
        .unwrap_or(600.0);
    let axis_y = f.axis_y();
    let mut k = 0.0;
    while k <= span {
        let xx = f.x(f.t0 + k);
        let _ = writeln!(
            svg,
            r##"<line x1="{xx:.1}" y1="{TOP}" x2="{xx:.1}" y2="{axis_y}" stroke="#eee"/><text x="{xx:.1}" y="{:.1}" text-anchor="middle">{k}s</text>"##,
            axis_y + 14.0
        );
        k += step;
    }
}

/// The lanes: the supervisors' row, then one line per handoff, named.
fn lanes(svg: &mut String, f: &Frame<'_>) {
    let _ = writeln!(
        svg,
        r#"<text x="6" y="{:.1}">supervisors</text><text x="6" y="{:.1}" font-size="9">(leader green)</text>"#,
        TOP + 16.0,
        TOP + 28.0
    );
    for (i, hid) in f.hids.iter().enumerate() {
        let y = f.lane_y(i);
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ccc"/><text x="6" y="{:.1}"><title>{}</title>{}</text>"##,
            LEFT + WIDTH,
            y + 24.0,
            esc(hid),
            esc(&hid.chars().take(12).collect::<String>())
        );
    }
}

/// Database outages (db-crash → db-up) across every lane, and terminated
/// backends on the lane of the handoff whose worker lost it.
fn db_faults(svg: &mut String, h: &History, f: &Frame<'_>) {
    for e in h.events.iter().filter(|e| e.is_chaos() && e.op() == "fault") {
        match e.s("kind") {
            Some("db-crash") => {
                let id = e.u("fault_id");
                let up = h
                    .events
                    .iter()
                    .find(|o| o.is_chaos() && o.s("what") == Some("db-up") && o.u("fault_id") == id)
                    .map_or(f.t_end, Ev::t);
                let _ = writeln!(
                    svg,
                    r##"<rect class="db-down" x="{:.1}" y="{TOP:.1}" width="{:.1}" height="{:.1}" fill="#888" opacity="0.18"><title>database down {:.3}s → {:.3}s</title></rect>"##,
                    f.x(e.t()),
                    (f.x(up) - f.x(e.t())).max(1.0),
                    f.lanes_height(),
                    e.t() - f.t0,
                    up - f.t0
                );
            }
            Some("db-terminate-backend") => {
                let y = e.hid().and_then(|hh| f.lane_of(hh)).map_or(TOP + 12.0, |l| f.lane_y(l) + 13.0);
                let _ = writeln!(
                    svg,
                    r##"<text class="db-term" x="{:.1}" y="{y:.1}" fill="#36c" font-size="13" text-anchor="middle">⌁<title>{:.3}s backend {} of {} terminated</title></text>"##,
                    f.x(e.t()),
                    e.t() - f.t0,
                    e.i("backend_pid").unwrap_or(0),
                    e.s("victim").unwrap_or("")
                );
            }
            _ => {}
        }
    }
}

/// Partitions (--hosts): bands across every lane, under the marks.
fn partitions(svg: &mut String, h: &History, f: &Frame<'_>) {
    for (e, heal) in crate::hosts::timeline::partitions(&h.events, f.t_end) {
        let _ = writeln!(
            svg,
            r##"<rect x="{:.1}" y="{TOP}" width="{:.1}" height="{:.1}" fill="#58a" opacity="0.15"><title>partition {:.3}s → {:.3}s: {}</title></rect><text x="{:.1}" y="{:.1}" font-size="9" fill="#358">partition</text>"##,
            f.x(e.t()),
            (f.x(heal) - f.x(e.t())).max(1.0),
            f.axis_y() - TOP,
            e.t() - f.t0,
            heal - f.t0,
            esc(&crate::hosts::timeline::describe(e)),
            f.x(e.t()) + 1.0,
            TOP - 2.0
        );
    }
}
