//! A timeline's legend, laid out to fit: one item per mark (its symbol as
//! drawn on the timeline, and a label), wrapped into as many rows as the
//! width needs instead of one line cut off at the picture's edge.

use std::fmt::Write as _;

/// How a legend item's symbol is drawn.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Sym {
    /// A filled bar of this colour.
    Bar(&'static str),
    /// A thin vertical tick of this colour.
    Tick(&'static str),
    /// A text glyph in this colour.
    Glyph(&'static str, &'static str),
}

/// Width of one character of the legend's text (monospace 11 px).
const CHAR_W: f64 = 6.7;
/// Height of a legend row.
pub(crate) const ROW_H: f64 = 15.0;
const SYM_W: f64 = 16.0;
const GAP: f64 = 14.0;

fn text_w(s: &str) -> f64 {
    s.chars().count() as f64 * CHAR_W
}

/// The legend's rows from `x0`, each at most `width` wide, the first row's
/// baseline at `y0`: the markup and the height it takes.
pub(crate) fn layout(items: &[(Sym, String)], x0: f64, width: f64, y0: f64) -> (String, f64) {
    let mut svg = String::from(r#"<g class="legend" font-size="11">"#);
    let (mut x, mut row) = (x0, 0usize);
    for (sym, label) in items {
        let w = SYM_W + 4.0 + text_w(label);
        if x > x0 && x + w > x0 + width {
            row += 1;
            x = x0;
        }
        let y = y0 + row as f64 * ROW_H;
        match sym {
            Sym::Bar(c) => {
                let _ = write!(svg, r#"<rect x="{x:.1}" y="{:.1}" width="{SYM_W}" height="8" fill="{c}"/>"#, y - 8.0);
            }
            Sym::Tick(c) => {
                let _ = write!(
                    svg,
                    r#"<line x1="{0:.1}" y1="{1:.1}" x2="{0:.1}" y2="{2:.1}" stroke="{c}" stroke-width="2"/>"#,
                    x + SYM_W / 2.0,
                    y - 9.0,
                    y + 1.0
                );
            }
            Sym::Glyph(g, c) => {
                let _ = write!(
                    svg,
                    r#"<text x="{:.1}" y="{:.1}" fill="{c}" font-size="13" text-anchor="middle">{g}</text>"#,
                    x + SYM_W / 2.0,
                    y + 1.0
                );
            }
        }
        let _ = write!(
            svg,
            r#"<text class="legend-item" x="{:.1}" y="{y:.1}">{}</text>"#,
            x + SYM_W + 4.0,
            dhp_markup::html(label)
        );
        x += w + GAP;
    }
    svg.push_str("</g>\n");
    (svg, (row + 1) as f64 * ROW_H)
}

/// The right edge of the legend's widest row (for a test: nothing past the picture).
#[cfg(test)]
pub(crate) fn widest(items: &[(Sym, String)], x0: f64, width: f64) -> f64 {
    let (mut x, mut max) = (x0, x0);
    for (_, label) in items {
        let w = SYM_W + 4.0 + text_w(label);
        if x > x0 && x + w > x0 + width {
            x = x0;
        }
        max = f64::max(max, x + w);
        x += w + GAP;
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_legend_wraps_inside_its_width() {
        let items: Vec<(Sym, String)> =
            (0..30).map(|i| (Sym::Bar("#000"), format!("item number {i} of thirty"))).collect();
        let (svg, h) = layout(&items, 10.0, 800.0, 20.0);
        assert!(h > ROW_H * 3.0, "30 long items take several rows: {h}");
        assert!(widest(&items, 10.0, 800.0) <= 810.0);
        assert_eq!(svg.matches("legend-item").count(), 30);
        let (_, h1) = layout(&items[..1], 10.0, 800.0, 20.0);
        assert_eq!(h1, ROW_H);
    }
}
