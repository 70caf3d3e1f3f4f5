//! The site's plots, drawn as inline SVG by this code (no script, no
//! library): every number in them comes from the round's saved files.
//! Each plot carries its key figures as `data-*` attributes too, so a
//! test (or a reader of the DOM) can compare them with `results.json`.

use super::esc;
use std::fmt::Write as _;

const W: f64 = 560.0;
const H: f64 = 220.0;
const L: f64 = 56.0;
const R: f64 = 16.0;
const T: f64 = 28.0;
const B: f64 = 36.0;

fn open(svg: &mut String, class: &str, title: &str, data: &str) {
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="plot {class}" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11"{data}><rect width="100%" height="100%" fill="white"/><text x="{L}" y="16" font-size="12" font-weight="bold">{}</text>"#,
        esc(title)
    );
}

/// 1, 2 or 5 × a power of ten, so that `span` holds at most about `n` steps.
fn nice_step(span: f64, n: f64) -> f64 {
    if !(span.is_finite() && span > 0.0) {
        return 1.0;
    }
    let raw = span / n;
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * p).find(|s| *s >= raw).unwrap_or(10.0 * p)
}

fn fmt_num(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Axes: x from 0 to `xmax` (`xlabel`), y from 0 to `ymax` (`ylabel`).
fn axes(svg: &mut String, xmax: f64, ymax: f64, xlabel: &str, ylabel: &str) {
    let (x0, y0, x1, y1) = (L, H - B, W - R, T);
    let _ = write!(
        svg,
        r##"<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="#333"/><line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" stroke="#333"/>"##
    );
    let sx = nice_step(xmax, 6.0);
    let mut k = 0.0;
    while k <= xmax * 1.0001 {
        let x = x0 + k / xmax * (x1 - x0);
        let _ = write!(
            svg,
            r##"<line x1="{x:.1}" y1="{y0}" x2="{x:.1}" y2="{:.1}" stroke="#333"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            y0 + 4.0,
            y0 + 15.0,
            fmt_num(k)
        );
        k += sx;
    }
    let sy = nice_step(ymax, 4.0);
    let mut k = 0.0;
    while k <= ymax * 1.0001 {
        let y = y0 - k / ymax * (y0 - y1);
        let _ = write!(
            svg,
            r##"<line x1="{:.1}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            x0,
            x0 - 4.0,
            y + 4.0,
            fmt_num(k)
        );
        k += sy;
    }
    let _ = write!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text x="12" y="{:.1}" transform="rotate(-90 12 {:.1})" text-anchor="middle">{}</text>"#,
        (x0 + x1) / 2.0,
        H - 4.0,
        esc(xlabel),
        (y0 + y1) / 2.0,
        (y0 + y1) / 2.0,
        esc(ylabel)
    );
}

fn empty(svg: &mut String, why: &str) {
    let _ = write!(
        svg,
        r##"<text class="no-data" x="{:.1}" y="{:.1}" text-anchor="middle" fill="#777">{}</text></svg>"##,
        W / 2.0,
        H / 2.0,
        esc(why)
    );
}

/// The kill → orphan latency distribution (cumulative, one dot per
/// sample) with the saved p50 and p99 marked.
pub(crate) fn latency(samples_s: &[f64], p50_s: Option<f64>, p99_s: Option<f64>) -> String {
    let ms = |v: f64| v * 1000.0;
    let mut svg = String::new();
    let data = format!(
        r#" data-n="{}" data-p50-ms="{}" data-p99-ms="{}""#,
        samples_s.len(),
        p50_s.map(|v| format!("{:.3}", ms(v))).unwrap_or_default(),
        p99_s.map(|v| format!("{:.3}", ms(v))).unwrap_or_default()
    );
    open(&mut svg, "latency", "worker SIGKILL → orphan: cumulative distribution", &data);
    let mut v: Vec<f64> = samples_s.iter().copied().filter(|x| x.is_finite()).map(ms).collect();
    v.sort_by(f64::total_cmp);
    let Some(&vmax) = v.last() else {
        empty(&mut svg, "no worker SIGKILL of a lease holder was measured this round");
        return svg;
    };
    let xmax = (vmax.max(p99_s.map_or(0.0, ms)) * 1.08).max(1.0);
    axes(&mut svg, xmax, 1.0, "milliseconds from the SIGKILL to the orphan", "share of kills");
    let (x0, y0, x1, y1) = (L, H - B, W - R, T);
    let px = |m: f64| x0 + m / xmax * (x1 - x0);
    let py = |f: f64| y0 - f * (y0 - y1);
    let n = v.len() as f64;
    let mut path = format!("M{:.1},{:.1}", px(0.0), py(0.0));
    for (i, m) in v.iter().enumerate() {
        let _ = write!(path, " L{:.1},{:.1} L{:.1},{:.1}", px(*m), py(i as f64 / n), px(*m), py((i + 1) as f64 / n));
    }
    let _ = write!(svg, r##"<path d="{path}" fill="none" stroke="#36c" stroke-width="1.5"/>"##);
    for (i, m) in v.iter().enumerate() {
        let _ = write!(
            svg,
            r##"<circle class="sample" cx="{:.1}" cy="{:.1}" r="2.5" fill="#36c"><title>{m:.1} ms</title></circle>"##,
            px(*m),
            py((i + 1) as f64 / n)
        );
    }
    for (class, p, colour, dy) in [("p50", p50_s, "#2a2", 0.0), ("p99", p99_s, "#d22", 13.0)] {
        let Some(p) = p.map(ms) else { continue };
        let x = px(p);
        let _ = write!(
            svg,
            r##"<line class="marker {class}" data-ms="{p:.3}" x1="{x:.1}" y1="{y0}" x2="{x:.1}" y2="{y1}" stroke="{colour}" stroke-dasharray="4 3" stroke-width="1.5"/><text class="marker-label {class}" x="{:.1}" y="{:.1}" fill="{colour}" text-anchor="{}">{class} {p:.0} ms</text>"##,
            x + if x > W - 120.0 { -4.0 } else { 4.0 },
            y1 + 12.0 + dy,
            if x > W - 120.0 { "end" } else { "start" }
        );
    }
    svg.push_str("</svg>");
    svg
}

/// Cumulative faults and SIGKILLs over the round (seconds from its
/// start), the fault phase shaded.
pub(crate) fn faults_over_time(faults: &[f64], kills: &[f64], span_s: f64, fault_phase: (f64, f64)) -> String {
    let mut svg = String::new();
    let data = format!(r#" data-faults="{}" data-kills="{}""#, faults.len(), kills.len());
    open(&mut svg, "faults", "faults and SIGKILLs so far", &data);
    let span = span_s.max(0.001);
    let ymax = (faults.len().max(kills.len()) as f64).max(1.0);
    axes(&mut svg, span, ymax, "seconds into the round", "count");
    let (x0, y0, x1, y1) = (L, H - B, W - R, T);
    let px = |t: f64| x0 + t.clamp(0.0, span) / span * (x1 - x0);
    let py = |c: f64| y0 - c / ymax * (y0 - y1);
    let _ = write!(
        svg,
        r##"<rect x="{:.1}" y="{y1}" width="{:.1}" height="{:.1}" fill="#fd8" opacity="0.35"><title>fault phase {:.2}s → {:.2}s</title></rect>"##,
        px(fault_phase.0),
        (px(fault_phase.1) - px(fault_phase.0)).max(1.0),
        y0 - y1,
        fault_phase.0,
        fault_phase.1
    );
    for (class, ts, colour, label) in [("faults", faults, "#f90", "faults"), ("kills", kills, "#d22", "SIGKILLs")] {
        let mut v: Vec<f64> = ts.to_vec();
        v.sort_by(f64::total_cmp);
        let mut path = format!("M{:.1},{:.1}", px(0.0), py(0.0));
        for (i, t) in v.iter().enumerate() {
            let _ = write!(path, " L{:.1},{:.1} L{:.1},{:.1}", px(*t), py(i as f64), px(*t), py((i + 1) as f64));
        }
        let _ = write!(path, " L{:.1},{:.1}", px(span), py(v.len() as f64));
        let _ = write!(
            svg,
            r#"<path class="{class}" d="{path}" fill="none" stroke="{colour}" stroke-width="1.8"><title>{} {label}</title></path>"#,
            v.len()
        );
    }
    let _ = write!(
        svg,
        r##"<text x="{:.1}" y="{:.1}" fill="#f90">— {} faults</text><text x="{:.1}" y="{:.1}" fill="#d22">— {} SIGKILLs</text></svg>"##,
        x0 + 8.0,
        y1 + 12.0,
        faults.len(),
        x0 + 8.0,
        y1 + 25.0,
        kills.len()
    );
    svg
}

/// Checkpoints per second over the round, one bar per time bin.
pub(crate) fn checkpoint_rate(times: &[f64], span_s: f64, source: &str) -> String {
    let mut svg = String::new();
    let data = format!(r#" data-checkpoints="{}" data-source="{}""#, times.len(), esc(source));
    open(&mut svg, "checkpoints", &format!("checkpoints committed per second ({source})"), &data);
    if times.is_empty() {
        empty(&mut svg, &format!("no checkpoint times ({source})"));
        return svg;
    }
    let span = span_s.max(times.iter().copied().fold(0.0, f64::max)).max(0.001);
    let bin = nice_step(span, 40.0);
    let nb = (span / bin).ceil().max(1.0) as usize;
    let mut bins = vec![0u64; nb];
    for t in times {
        let k = ((t.max(0.0) / bin) as usize).min(nb - 1);
        bins[k] += 1;
    }
    let rate = |c: u64| c as f64 / bin;
    let ymax = bins.iter().map(|c| rate(*c)).fold(0.0, f64::max).max(1.0) * 1.1;
    axes(&mut svg, nb as f64 * bin, ymax, &format!("seconds into the round ({} s bins)", fmt_num(bin)), "per second");
    let (x0, y0, x1, y1) = (L, H - B, W - R, T);
    let bw = (x1 - x0) / nb as f64;
    for (k, c) in bins.iter().enumerate() {
        let h = rate(*c) / ymax * (y0 - y1);
        let _ = write!(
            svg,
            r##"<rect class="bin" data-count="{c}" x="{:.1}" y="{:.1}" width="{:.1}" height="{h:.1}" fill="#4a7"><title>{:.2}s–{:.2}s: {c} checkpoints</title></rect>"##,
            x0 + k as f64 * bw + 0.5,
            y0 - h,
            (bw - 1.0).max(0.5),
            k as f64 * bin,
            (k + 1) as f64 * bin
        );
    }
    svg.push_str("</svg>");
    svg
}

/// Chunks each faulted worker computed but did not commit itself, with the
/// limit of one chunk.
pub(crate) fn rework(per_fault: &[(String, String, u64)], limit: u64) -> String {
    let mut svg = String::new();
    let total: u64 = per_fault.iter().map(|r| r.2).sum();
    let max = per_fault.iter().map(|r| r.2).max().unwrap_or(0);
    let data = format!(r#" data-faulted="{}" data-total="{total}" data-max="{max}""#, per_fault.len());
    open(&mut svg, "rework", "chunks redone per faulted worker (limit 1)", &data);
    if per_fault.is_empty() {
        empty(&mut svg, "no faulted worker to measure");
        return svg;
    }
    let ymax = (max.max(limit) as f64 + 1.0).max(2.0);
    let n = per_fault.len();
    axes(&mut svg, n as f64, ymax, "faulted workers (hover a bar for which)", "chunks");
    let (x0, y0, x1, y1) = (L, H - B, W - R, T);
    let bw = (x1 - x0) / n as f64;
    let py = |c: f64| y0 - c / ymax * (y0 - y1);
    for (k, (victim, hid, c)) in per_fault.iter().enumerate() {
        let h = y0 - py(*c as f64);
        let fill = if *c > limit { "#d22" } else { "#69c" };
        let _ = write!(
            svg,
            r#"<rect class="bar" data-chunks="{c}" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{fill}"><title>{} on {}: {c} chunk(s)</title></rect>"#,
            x0 + k as f64 * bw + 1.0,
            py(*c as f64) - if *c == 0 { 1.5 } else { 0.0 },
            (bw - 2.0).max(0.5),
            h.max(1.5),
            esc(victim),
            esc(hid)
        );
    }
    let y = py(limit as f64);
    let _ = write!(
        svg,
        r##"<line class="limit" x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke="#d22" stroke-dasharray="5 3"/><text x="{:.1}" y="{:.1}" fill="#d22" text-anchor="end">limit {limit}</text></svg>"##,
        x1 - 2.0,
        y - 3.0
    );
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_nice() {
        assert_eq!(nice_step(10.0, 5.0), 2.0);
        assert_eq!(nice_step(0.7, 6.0), 0.2);
        assert_eq!(nice_step(0.0, 6.0), 1.0);
        assert_eq!(nice_step(f64::NAN, 6.0), 1.0);
    }

    #[test]
    fn the_latency_plot_marks_the_given_percentiles() {
        let s = latency(&[0.002, 0.007, 0.013], Some(0.007), Some(0.013));
        assert!(s.contains(r#"data-p50-ms="7.000""#) && s.contains(r#"data-p99-ms="13.000""#), "{s}");
        assert_eq!(s.matches(r#"class="sample""#).count(), 3);
        assert!(s.contains("p50 7 ms") && s.contains("p99 13 ms"), "{s}");
        let none = latency(&[], None, None);
        assert!(none.contains("no-data") && !none.contains("marker"), "{none}");
    }

    #[test]
    fn the_checkpoint_bins_hold_every_checkpoint() {
        let t: Vec<f64> = (0..97).map(|i| f64::from(i) * 0.05).collect();
        let s = checkpoint_rate(&t, 5.0, "history");
        let sum: u64 =
            s.split(r#"data-count=""#).skip(1).filter_map(|p| p.split('"').next()?.parse::<u64>().ok()).sum();
        assert_eq!(sum, 97, "{s}");
    }
}
