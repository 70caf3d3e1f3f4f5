//! The handoffs' lanes: who owned each handoff (bars, labelled with holder
//! and fence), and the marks over them — checkpoints, completions,
//! orphans, and the faults that hit its workers.

use super::{color, esc, Frame};
use crate::hist::{ActionKind, Ev, History};
use std::collections::HashMap;
use std::fmt::Write as _;

struct Seg {
    start: f64,
    end: f64,
    label: String,
    holder: String,
}

/// Ownership segments per handoff, built event by event.
#[derive(Default)]
struct Owners {
    segs: HashMap<String, Vec<Seg>>,
    /// hid → (holder, fence, start) of the ownership still open.
    open: HashMap<String, (String, i64, f64)>,
}

impl Owners {
    /// End `hid`'s open ownership at `t`, if `holder` (when given) holds it.
    fn close(&mut self, hid: &str, t: f64, holder: Option<&str>) {
        if let Some((hh, f, s)) = self.open.get(hid).cloned() {
            if holder.is_none_or(|h| h == hh) {
                self.segs.entry(hid.into()).or_default().push(Seg {
                    start: s,
                    end: t,
                    label: format!("{hh} f{f}"),
                    holder: hh,
                });
                self.open.remove(hid);
            }
        }
    }

    /// The segments, those still open ending where their holder exited
    /// (or at the end of the round).
    fn finish(mut self, h: &History, t_end: f64) -> HashMap<String, Vec<Seg>> {
        for (hid, (hh, f, s)) in self.open.drain() {
            let end = h
                .events
                .iter()
                .filter(|e| e.is_chaos() && e.op() == "exit" && e.s("name") == Some(hh.as_str()))
                .map(Ev::t)
                .next()
                .unwrap_or(t_end);
            self.segs.entry(hid).or_default().push(Seg { start: s, end, label: format!("{hh} f{f}"), holder: hh });
        }
        self.segs
    }
}

/// Draw the owners' bars into `svg`; return the marks, to be drawn later
/// (over the partitions).
pub(super) fn draw(svg: &mut String, h: &History, f: &Frame<'_>) -> String {
    let mut owners = Owners::default();
    let mut marks = String::new();
    for e in &h.events {
        let Some(hid) = e.hid() else { continue };
        let Some(lane) = f.lane_of(hid) else { continue };
        let y = f.lane_y(lane);
        if e.is_chaos() {
            fault_mark(&mut marks, &mut owners, h, f, e, hid, y);
        } else {
            protocol_mark(&mut marks, &mut owners, f, e, hid, y);
        }
    }
    for (hid, list) in &owners.finish(h, f.t_end) {
        let Some(lane) = f.lane_of(hid) else { continue };
        let y = f.lane_y(lane);
        for sg in list {
            bar(svg, f, y, sg);
        }
    }
    marks
}

/// One owner's bar, with its label if it fits, else the fence alone, else
/// a marker above the bar (the bar's tooltip says it all).
fn bar(svg: &mut String, f: &Frame<'_>, y: f64, sg: &Seg) {
    let t0 = f.t0;
    let w = (f.x(sg.end) - f.x(sg.start)).max(1.0);
    let _ = writeln!(
        svg,
        r#"<rect x="{:.1}" y="{:.1}" width="{w:.1}" height="18" fill="{}" stroke="white" stroke-width="0.5"><title>{} {:.3}s → {:.3}s</title></rect>"#,
        f.x(sg.start),
        y + 10.0,
        color(&sg.holder),
        esc(&sg.label),
        sg.start - t0,
        sg.end - t0
    );
    let fence = sg.label.rsplit(' ').next().unwrap_or("");
    let tip = format!("{} {:.3}s → {:.3}s", sg.label, sg.start - t0, sg.end - t0);
    if w > 7.0 * sg.label.chars().count() as f64 {
        let _ = writeln!(svg, r#"<text x="{:.1}" y="{:.1}">{}</text>"#, f.x(sg.start) + 2.0, y + 23.0, esc(&sg.label));
    } else if w > 7.0 * fence.chars().count() as f64 + 2.0 {
        let _ = writeln!(
            svg,
            r#"<text class="short-label" x="{:.1}" y="{:.1}">{}<title>{}</title></text>"#,
            f.x(sg.start) + 1.0,
            y + 23.0,
            esc(fence),
            esc(&tip)
        );
    } else {
        let _ = writeln!(
            svg,
            r##"<text class="short-bar" x="{:.1}" y="{:.1}" font-size="10" fill="#555" text-anchor="middle">▾<title>{}</title></text>"##,
            f.x(sg.start) + w / 2.0,
            y + 9.5,
            esc(&tip)
        );
    }
}

/// A fault on a handoff's worker: a SIGKILL (or failpoint death) ends its
/// ownership; a SIGSTOP is a band to its end.
fn fault_mark(marks: &mut String, owners: &mut Owners, h: &History, f: &Frame<'_>, e: &Ev, hid: &str, y: f64) {
    let t = e.t();
    match (e.op(), e.s("signal")) {
        ("fault", Some("KILL")) if e.s("kind") != Some("teardown") => {
            let c = if e.s("kind") == Some("failpoint") { "#a3c" } else { "#d22" };
            let _ = writeln!(
                marks,
                r#"<text x="{:.1}" y="{:.1}" fill="{c}" font-size="15" text-anchor="middle">×<title>{:.3}s {} {} {}</title></text>"#,
                f.x(t),
                y + 13.0,
                t - f.t0,
                esc(e.s("kind").unwrap_or("")),
                esc(e.s("victim").unwrap_or("")),
                esc(e.s("failpoint").unwrap_or(""))
            );
            owners.close(hid, t, e.s("victim"));
        }
        ("fault", Some("STOP")) => stop_band(marks, h, f, e, y),
        _ => {}
    }
}

/// Where the stop of `victim` at `t` ended: SIGCONT, or the process dying
/// while stopped (only SIGKILL can do that), or the end of the round.
fn stop_end(h: &History, victim: &str, t: f64, t_end: f64) -> (f64, &'static str) {
    let after = |op: &str, sig: Option<&str>| {
        h.events
            .iter()
            .find(|c| {
                c.is_chaos() && c.op() == op && (sig.is_none() || c.s("signal") == sig) && c.t() >= t && {
                    if op == "exit" {
                        c.s("name") == Some(victim)
                    } else {
                        c.s("victim") == Some(victim)
                    }
                }
            })
            .map(Ev::t)
    };
    match (after("fault", Some("CONT")), after("exit", None)) {
        (Some(c), Some(x)) if x < c => (x, "killed while stopped"),
        (Some(c), _) => (c, "SIGCONT"),
        (None, Some(x)) => (x, "killed while stopped"),
        (None, None) => (t_end, "end of round"),
    }
}

/// A SIGSTOP's band, and a dark red × where the stopped process was killed
/// by none the history names (a supervisor's stalled-writer watchdog).
fn stop_band(marks: &mut String, h: &History, f: &Frame<'_>, e: &Ev, y: f64) {
    let t = e.t();
    let victim = e.s("victim").unwrap_or("");
    let (end, how) = stop_end(h, victim, t, f.t_end);
    let _ = writeln!(
        marks,
        r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="6" fill="#f90" opacity="0.8"><title>{} SIGSTOP {:.3}s → {how} {:.3}s</title></rect>"##,
        f.x(t),
        y + 30.0,
        (f.x(end) - f.x(t)).max(1.0),
        esc(victim),
        t - f.t0,
        end - f.t0
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
        let _ = writeln!(
            marks,
            r##"<text x="{:.1}" y="{:.1}" fill="#822" font-size="15" text-anchor="middle" class="killed-while-stopped">×<title>{:.3}s {} SIGKILLed while stopped, not by the harness (a supervisor's stalled-writer watchdog)</title></text>"##,
            f.x(end),
            y + 13.0,
            end - f.t0,
            esc(victim)
        );
    }
}

/// A protocol event of the judged: a claim or recover opens an ownership,
/// a checkpoint is a tick, a completion (●) and an orphan (◆, ■ for DLQ)
/// end one.
fn protocol_mark(marks: &mut String, owners: &mut Owners, f: &Frame<'_>, e: &Ev, hid: &str, y: f64) {
    let t = e.t();
    match (e.op(), e.ty()) {
        ("claim" | "recover", "ok") => {
            owners.close(hid, t, None);
            owners
                .open
                .insert(hid.into(), (e.s("holder").unwrap_or(e.process()).into(), e.i("fence").unwrap_or(-1), t));
        }
        ("checkpoint", "ok") => {
            let _ = writeln!(
                marks,
                r##"<line x1="{0:.1}" y1="{1:.1}" x2="{0:.1}" y2="{2:.1}" stroke="#333" stroke-width="0.6"><title>seq {3} by {4} fence {5} at {6:.3}s</title></line>"##,
                f.x(t),
                y + 2.0,
                y + 8.0,
                e.i("seq").unwrap_or(-1),
                esc(e.process()),
                e.i("fence").unwrap_or(-1),
                t - f.t0
            );
        }
        ("complete", "ok") => {
            let _ = writeln!(
                marks,
                r##"<circle cx="{:.1}" cy="{:.1}" r="5" fill="#2a2"><title>complete by {} at {:.3}s</title></circle>"##,
                f.x(t),
                y + 20.0,
                esc(e.process()),
                t - f.t0
            );
            owners.close(hid, t, Some(e.s("holder").unwrap_or(e.process())));
        }
        ("supervise", "ok") => {
            let shape = if e.action() == Some(ActionKind::Dlq) { "■" } else { "◆" };
            let _ = writeln!(
                marks,
                r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">{shape}<title>{} by {} at {:.3}s: {} fence {} → {} ({})</title></text>"#,
                f.x(t),
                y + 42.0,
                esc(e.s("action").unwrap_or("")),
                esc(e.process()),
                t - f.t0,
                esc(e.s("previous_holder").unwrap_or("?")),
                e.i("previous_fence").unwrap_or(-1),
                e.i("fence").unwrap_or(-1),
                esc(e.s("reason").unwrap_or(""))
            );
            owners.close(hid, t, e.s("previous_holder"));
        }
        _ => {}
    }
}
