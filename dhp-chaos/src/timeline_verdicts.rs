//! The timeline's verdict block: per invariant its status, the sources it
//! used and how many events it checked (from the round's `round-report.json`).

use std::fmt::Write as _;
use std::path::Path;

/// One line per invariant of the round's saved report (none when there is no report yet).
pub(crate) fn lines(dir: &Path) -> Vec<String> {
    let Ok(r) = crate::check::load_saved_report(dir) else { return Vec::new() };
    let mut v = vec![format!(
        "verdicts — sources this round had: {}{}",
        r.sources.join(", "),
        r.audit_events.map(|n| format!("; store audit: {n} committed changes")).unwrap_or_default()
    )];
    v.extend(r.invariants.iter().map(|i| {
        format!(
            "{:<32} {:<13} checked {:>6}  sources: {}{}",
            i.name,
            if i.status.is_empty() { "?" } else { i.status.as_str() },
            i.checked,
            i.sources.join(","),
            i.unchecked.as_deref().map(|u| format!("  ({u})")).unwrap_or_default()
        )
    }));
    v.extend(crate::coverage::timeline_lines(&r.coverage));
    v
}

/// Draw `lines` from `y` down, 13 px apart.
pub(crate) fn draw(svg: &mut String, lines: &[String], y: f64) {
    for (k, l) in lines.iter().enumerate() {
        let _ = write!(
            svg,
            r#"<text class="verdict" x="10" y="{:.1}" font-size="10" xml:space="preserve">{}</text>"#,
            y + 13.0 * k as f64,
            dhp_markup::html(l)
        );
    }
}
