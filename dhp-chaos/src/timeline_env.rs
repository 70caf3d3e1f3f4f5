//! The link, clock and disk row of the timeline: a band per link fault
//! (blue; the workers' database link teal; toxic in its title) and per full disk (brown; the store's darker), from the fault to
//! its heal; a tick per process started with a faked clock (its offset and
//! rate in the title).

use crate::hist::History;
use crate::timeline_legend::Sym;
use serde_json::Value;
use std::collections::HashMap;
use std::fmt::Write as _;

/// The legend items of the kinds this history has (none of a kind the round never injected:
/// no `db-link` in a SQLite round).
pub(crate) fn legend(h: &History) -> Vec<(Sym, String)> {
    let mut out = Vec::new();
    let has = |k: &str| h.events.iter().any(|e| e.is_chaos() && e.op() == "fault" && e.s("kind") == Some(k));
    for (k, c, label) in [
        ("link", "#48c", "link fault"),
        ("db-link", "#2a9", "database link fault"),
        ("disk-full", "#a63", "peer disk full"),
        ("store-full", "#752", "store disk full"),
    ] {
        if has(k) {
            out.push((Sym::Bar(c), label.to_string()));
        }
    }
    if h.events.iter().any(|e| e.is_chaos() && e.op() == "spawn" && e.get("faketime").is_some()) {
        out.push((Sym::Tick("#c3c"), "faked clock".to_string()));
    }
    out
}

/// Draw the row at `y` (10 px high); `x` maps a time to its abscissa;
/// `label`: the row's name in the left margin (none on a host's lane).
pub(crate) fn draw(
    svg: &mut String,
    h: &History,
    x: &dyn Fn(f64) -> f64,
    y: f64,
    t0: f64,
    t_end: f64,
    label: Option<&str>,
) {
    let chaos = || h.events.iter().filter(|e| e.is_chaos());
    let heals: HashMap<(&str, u64), f64> = chaos()
        .filter(|e| matches!(e.op(), "link-heal" | "disk-heal"))
        .filter_map(|e| Some(((e.op(), e.u("fault_id")?), e.t())))
        .collect();
    let mut any = false;
    for e in chaos().filter(|e| e.op() == "fault") {
        let (heal, fill, what) = match e.s("kind") {
            Some("link") => ("link-heal", "#48c", e.get("toxic").map(Value::to_string).unwrap_or_default()),
            Some("db-link") => ("link-heal", "#2a9", e.get("toxic").map(Value::to_string).unwrap_or_default()),
            Some("disk-full") => ("disk-heal", "#a63", format!("{} ballast bytes", e.u("ballast_bytes").unwrap_or(0))),
            Some("store-full") => ("disk-heal", "#752", format!("{} ballast bytes", e.u("ballast_bytes").unwrap_or(0))),
            _ => continue,
        };
        any = true;
        let end = e.u("fault_id").and_then(|id| heals.get(&(heal, id)).copied()).unwrap_or(t_end);
        let _ = writeln!(
            svg,
            r#"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="10" fill="{fill}" opacity="0.7"><title>{} {:.3}s → {:.3}s: {}</title></rect>"#,
            x(e.t()),
            (x(end) - x(e.t())).max(1.0),
            dhp_markup::html(e.s("kind").unwrap_or("")),
            e.t() - t0,
            end - t0,
            dhp_markup::html(&what)
        );
    }
    for e in chaos().filter(|e| e.op() == "spawn" && e.get("faketime").is_some()) {
        any = true;
        let _ = writeln!(
            svg,
            r##"<line x1="{xx:.1}" y1="{y:.1}" x2="{xx:.1}" y2="{:.1}" stroke="#c3c" stroke-width="2"><title>{} clock {}</title></line>"##,
            y + 10.0,
            dhp_markup::html(e.s("name").unwrap_or("")),
            dhp_markup::html(e.s("faketime").unwrap_or("")),
            xx = x(e.t()),
        );
    }
    if let (true, Some(l)) = (any, label) {
        let _ = writeln!(svg, r#"<text x="6" y="{:.1}" font-size="9">{}</text>"#, y + 9.0, dhp_markup::html(l));
    }
}
