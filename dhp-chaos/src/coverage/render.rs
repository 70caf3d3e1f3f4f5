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
