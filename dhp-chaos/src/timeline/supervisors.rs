//! The timeline's top row: one thin bar per supervisor and transport
//! server (spawn → exit), green while it led, × where it was killed.

use super::{esc, Frame, LANE, TOP};
use crate::hist::{Ev, History};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt::Write as _;

/// The supervisors and transport servers of a history, in spawn order,
/// with their lifetimes.
struct Rows {
    spawned: HashMap<String, f64>,
    exited: HashMap<String, f64>,
    roles: HashMap<String, String>,
    /// The row order: by spawn time.
    names: Vec<String>,
}

impl Rows {
    fn new(h: &History) -> Self {
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
        let mut names: Vec<String> = roles
            .iter()
            .filter(|(_, r)| r.as_str() == "supervisor" || r.as_str() == "transport")
            .map(|(n, _)| n.clone())
            .collect();
        names.sort_by(|a, b| spawned[a].total_cmp(&spawned[b]));
        Rows { spawned, exited, roles, names }
    }

    /// The height of one row.
    fn height(&self) -> f64 {
        (LANE - 8.0) / self.names.len().max(1) as f64
    }

    /// The top of row `i`.
    fn y(&self, i: usize) -> f64 {
        TOP + 4.0 + i as f64 * self.height()
    }

    fn row_of(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|s| s == name)
    }
}

/// Draw the supervisors' row: lifetimes, leaders over them, kills.
pub(super) fn draw(svg: &mut String, h: &History, f: &Frame<'_>) {
    let rows = Rows::new(h);
    lifetimes(svg, f, &rows);
    leaders(svg, h, f, &rows);
    kills(svg, h, f, &rows);
}

/// Process lifetimes (spawn → exit).
fn lifetimes(svg: &mut String, f: &Frame<'_>, rows: &Rows) {
    let sup_h = rows.height();
    for (i, s) in rows.names.iter().enumerate() {
        let y = rows.y(i);
        let (a, b) = (rows.spawned[s], rows.exited.get(s).copied().unwrap_or(f.t_end));
        let fill = if rows.roles[s] == "transport" { "#bcd" } else { "#ddd" };
        let _ = writeln!(
            svg,
            r##"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{fill}"><title>{}: {:.3}s → {:.3}s</title></rect>"##,
            f.x(a),
            (f.x(b) - f.x(a)).max(1.0),
            (sup_h - 1.0).max(1.0),
            esc(s),
            a - f.t0,
            b - f.t0
        );
    }
}

/// Leader intervals, as the monitor observed them: (holder, from, to).
fn leader_intervals(h: &History, t_end: f64) -> Vec<(String, f64, f64)> {
    let mut leader: Option<(String, f64)> = None;
    let mut out = Vec::new();
    for e in h.events.iter().filter(|e| e.is_chaos() && e.op() == "observe" && e.s("what") == Some("leader")) {
        if let Some((n, s)) = leader.take() {
            out.push((n, s, e.t()));
        }
        if let Some(n) = e.s("holder") {
            leader = Some((n.into(), e.t()));
        }
    }
    if let Some((n, s)) = leader {
        out.push((n, s, t_end));
    }
    out
}

fn leaders(svg: &mut String, h: &History, f: &Frame<'_>, rows: &Rows) {
    let sup_h = rows.height();
    for (n, a, b) in leader_intervals(h, f.t_end) {
        if let Some(i) = rows.row_of(&n) {
            let y = rows.y(i);
            let _ = writeln!(
                svg,
                r##"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="#4a7"><title>{} leader {:.3}s → {:.3}s</title></rect>"##,
                f.x(a),
                (f.x(b) - f.x(a)).max(1.0),
                (sup_h - 1.0).max(1.0),
                esc(&n),
                a - f.t0,
                b - f.t0
            );
        }
    }
}

/// Kills of supervisors and the transport server, on their rows.
fn kills(svg: &mut String, h: &History, f: &Frame<'_>, rows: &Rows) {
    let sup_h = rows.height();
    let killed =
        |e: &&Ev| e.is_chaos() && e.op() == "fault" && e.s("signal") == Some("KILL") && e.s("kind") != Some("teardown");
    for e in h.events.iter().filter(killed) {
        let Some(v) = e.s("victim") else { continue };
        if let Some(i) = rows.row_of(v) {
            let y = rows.y(i) + sup_h / 2.0 + 4.0;
            let _ = writeln!(
                svg,
                r#"<text x="{:.1}" y="{y:.1}" fill="{}" font-size="12" text-anchor="middle">×<title>{:.3}s {} {}</title></text>"#,
                f.x(e.t()),
                if e.get("leader").and_then(Value::as_bool) == Some(true) { "#d22" } else { "#a55" },
                e.t() - f.t0,
                esc(e.s("kind").unwrap_or("")),
                esc(v)
            );
        }
    }
}
