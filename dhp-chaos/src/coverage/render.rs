//! The ledger as text: the summary's coverage section.

use super::{Column, Coverage, Moment, Tally};
use std::fmt::Write;

/// The moment × fault matrix: hits, `·` for an applicable cell never hit,
/// `n/a` for one the configuration cannot hit.
pub fn matrix_text(c: &Coverage) -> String {
    let mut s = format!("  {:<24}", "moment \\ fault");
    for col in Column::ALL {
        let _ = write!(s, "{:>11}", col.name());
    }
    s.push('\n');
    for m in Moment::ALL {
        let _ = write!(s, "  {:<24}", m.name());
        for col in Column::ALL {
            let cell = c.matrix.iter().find(|x| x.moment == m.name() && x.fault == col.name());
            let text = match cell {
                Some(x) if x.not_applicable.is_some() && x.hits == 0 => "n/a".to_string(),
                Some(x) if x.hits == 0 => "·".to_string(),
                Some(x) => x.hits.to_string(),
                None => "?".to_string(),
            };
            let _ = write!(s, "{text:>11}");
        }
        s.push('\n');
    }
    s
}

fn tally_line(t: &Tally) -> String {
    let state = match (&t.not_applicable, t.hits, t.target) {
        (Some(why), 0, _) => format!("n/a     {why}"),
        (_, 0, true) => "MISSED".to_string(),
        (_, 0, false) => "not reached (not a target)".to_string(),
        (_, n, _) => format!("{n}"),
    };
    format!("  {:<22}{state}\n", t.name)
}

/// The summary's coverage section of a run (its rounds merged).
pub fn run_lines(c: &Coverage) -> String {
    let mut s = String::from("coverage (what the harness saw itself; n/a: this configuration cannot do it):\n");
    s.push_str(&matrix_text(c));
    s.push_str(" situations:\n");
    for t in &c.situations {
        s.push_str(&tally_line(t));
    }
    s.push_str(" fault kinds fired:\n");
    for t in c.faults.iter().filter(|t| t.hits > 0 || t.not_applicable.is_none()) {
        s.push_str(&tally_line(t));
    }
    if let Some(st) = &c.steering {
        let _ = writeln!(
            s,
            " steering (--steer): {} choice(s), {} handoff(s) added{}",
            st.choices,
            st.extensions,
            if st.missing_at_bound.is_empty() {
                String::new()
            } else {
                format!("; still missing at the extension bound: {}", st.missing_at_bound.join(", "))
            }
        );
    }
    match &c.schedule {
        Some(sc) if sc.matched => {
            let _ = writeln!(s, " schedule re-derived from the seed: {} steps, identical byte for byte", sc.steps);
        }
        Some(sc) => {
            let _ = writeln!(
                s,
                " SCHEDULE NOT REPRODUCIBLE from the seed (harness error): {}",
                sc.first_difference.as_deref().unwrap_or("?")
            );
        }
        None => {}
    }
    let missed = c.missed();
    let uncovered = c.uncovered();
    if !missed.is_empty() {
        let _ = writeln!(
            s,
            " not covered: {}{}",
            missed.join(", "),
            if uncovered.is_empty() { " (allowed by --allow-uncovered)" } else { "" }
        );
    }
    s
}

/// The ledger as an HTML fragment for the run page (`class` tells the run's
/// from a round's): the matrix, then situations and fault kinds.
pub fn html(c: &Coverage, class: &str) -> String {
    use crate::site::esc;
    let mut p = format!(
        r#"<table class="coverage-matrix {class}"><tr><th>moment \ fault</th>{}</tr>"#,
        Column::ALL.iter().map(|c| format!("<th>{}</th>", c.name())).collect::<String>()
    );
    for m in Moment::ALL {
        let _ = write!(p, "<tr><td>{}</td>", m.name());
        for col in Column::ALL {
            let cell = c.matrix.iter().find(|x| x.moment == m.name() && x.fault == col.name());
            let _ = match cell {
                Some(x) if x.not_applicable.is_some() && x.hits == 0 => {
                    write!(p, r#"<td class="na" title="{}">n/a</td>"#, esc(x.not_applicable.as_deref().unwrap_or("")))
                }
                Some(x) if x.hits == 0 => write!(p, r#"<td class="missed num">0</td>"#),
                Some(x) => write!(p, r#"<td class="hit num">{}</td>"#, x.hits),
                None => write!(p, "<td>?</td>"),
            };
        }
        p.push_str("</tr>");
    }
    p.push_str("</table>\n");
    let _ = write!(
        p,
        r#"<table class="coverage-targets {class}"><tr><th>situation or fault kind</th><th>reached</th><th>target</th><th>from</th></tr>"#
    );
    for t in c.situations.iter().chain(c.faults.iter().filter(|t| t.hits > 0 || t.not_applicable.is_none())) {
        let (cls, state) = match (&t.not_applicable, t.hits) {
            (Some(why), 0) => ("na", format!("n/a — {}", esc(why))),
            (_, 0) if t.target => ("missed", "MISSED".to_string()),
            (_, n) => ("hit", n.to_string()),
        };
        let _ = write!(
            p,
            r#"<tr class="{cls}" data-target="{}"><td>{}</td><td>{state}</td><td>{}</td><td>{}</td></tr>"#,
            esc(&t.name),
            esc(&t.name),
            if t.target { "yes" } else { "no" },
            esc(&t.source)
        );
    }
    p.push_str("</table>\n");
    let missed = c.missed();
    if !missed.is_empty() {
        let _ = writeln!(
            p,
            r#"<p class="not-covered">not covered: {}{}</p>"#,
            esc(&missed.join(", ")),
            if c.uncovered().is_empty() { " (allowed by --allow-uncovered)" } else { "" }
        );
    }
    p
}

/// The round's ledger for the timeline's verdict block: the matrix, then
/// one line of situations and targets missed.
pub fn timeline_lines(c: &Coverage) -> Vec<String> {
    if c.matrix.is_empty() {
        return Vec::new(); // a report saved before the ledger existed
    }
    let mut v = vec!["coverage — moment × fault (n/a: this configuration cannot; ·: never hit)".to_string()];
    v.extend(matrix_text(c).lines().map(String::from));
    let reached: Vec<String> = c
        .situations
        .iter()
        .filter(|t| t.not_applicable.is_none() || t.hits > 0)
        .map(|t| format!("{} {}", t.name, t.hits))
        .collect();
    v.push(format!("  situations: {}", reached.join(", ")));
    let missed = c.missed();
    if !missed.is_empty() {
        v.push(format!("  NOT COVERED: {}", missed.join(", ")));
    }
    v
}
