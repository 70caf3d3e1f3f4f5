//! `--format markdown`: a report for a CI step summary — totals per
//! implementation, the matrix, and the failures with their messages.

use super::{assertions, implementations, tally, Counts, Record};
use crate::suite::Outcome;

fn cell(r: Option<&Record>) -> &'static str {
    match r.map(|r| (&r.outcome, r.expected.is_some())) {
        None => "—",
        Some((Outcome::Passed, _)) => "✅ pass",
        Some((Outcome::Failed(_), true)) => "☑️ expected fail",
        Some((Outcome::Errored(_), true)) => "☑️ expected error",
        Some((Outcome::Failed(_), false)) => "❌ **FAIL**",
        Some((Outcome::Errored(_), false)) => "⚠️ **error**",
        Some((Outcome::Skipped(_), _)) => "⏭️ skip",
    }
}

/// Judged text (an implementation's name, an adapter's message) as inert
/// inline Markdown; in code style through `<code>`, since a code span
/// would take entities literally and a backtick would end it.
use dhp_markup::markdown as esc;

fn code(s: &str) -> String {
    format!("<code>{}</code>", esc(s))
}

/// The report; `surprises` are the `--expect` mismatches, if any.
pub fn render(records: &[Record], seconds: f64, surprises: Option<&[(&Record, String)]>) -> String {
    let imps = implementations(records);
    let mut o = String::from("## DHP 1.3 conformance\n\n| implementation | result |\n|---|---|\n");
    for i in &imps {
        let c = Counts::of(records.iter().filter(|r| &r.implementation == i));
        o.push_str(&format!("| {} | {} |\n", code(i), tally(&c)));
    }
    o.push_str(&format!("\n{} in {seconds:.1}s\n\n", Counts::of(records).line()));
    o.push_str("| assertion | level |");
    for i in &imps {
        o.push_str(&format!(" {} |", esc(i)));
    }
    o.push_str("\n|---|---|");
    o.push_str(&"---|".repeat(imps.len()));
    o.push('\n');
    for (name, level) in assertions(records) {
        o.push_str(&format!("| `{name}` | {} |", level.as_str()));
        for i in &imps {
            let r = records.iter().find(|r| &r.implementation == i && r.assertion == name);
            o.push_str(&format!(" {} |", cell(r)));
        }
        o.push('\n');
    }
    let bad: Vec<&Record> = records.iter().filter(|r| r.is_bad()).collect();
    if !bad.is_empty() {
        o.push_str("\n### Failures\n\n");
        for r in bad {
            o.push_str(&format!(
                "- `{}` on {} ({}): {}\n",
                r.assertion,
                code(&r.implementation),
                r.outcome.word(),
                esc(r.outcome.message().unwrap_or(""))
            ));
        }
    }
    let known: Vec<&Record> = records.iter().filter(|r| r.expected.is_some()).collect();
    if !known.is_empty() {
        o.push_str("\n### Expected failures (`--expect`)\n\n");
        for r in known {
            o.push_str(&format!(
                "- `{}` on {} ({}, as pinned: {}): {}\n",
                r.assertion,
                code(&r.implementation),
                r.outcome.word(),
                esc(r.expected.as_deref().unwrap_or("")),
                esc(r.outcome.message().unwrap_or(""))
            ));
        }
    }
    if let Some(s) = surprises {
        o.push_str("\n### Against the expectations\n\n");
        if s.is_empty() {
            o.push_str("Every outcome is as expected.\n");
        }
        for (r, why) in s {
            o.push_str(&format!("- `{}` on {}: {}\n", r.assertion, code(&r.implementation), esc(why)));
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::Level;

    fn rec(imp: &str, a: &str, level: Level, o: Outcome) -> Record {
        Record {
            implementation: imp.into(),
            assertion: a.into(),
            level,
            outcome: o,
            seconds: 0.5,
            stderr: vec![],
            expected: None,
        }
    }

    /// Snapshot: the whole report for a fixed set of records.
    #[test]
    fn snapshot() {
        let rs = vec![
            rec("ours", "fencing", Level::Core, Outcome::Passed),
            rec("reference", "fencing", Level::Core, Outcome::Failed("stale | token\nwrote".into())),
            rec("ours", "fast-death-detection", Level::Extended, Outcome::Passed),
            rec("reference", "fast-death-detection", Level::Extended, Outcome::Skipped("unsupported".into())),
        ];
        let surprise = [(&rs[1], "expected to pass, failed".to_string())];
        let got = render(&rs, 12.34, Some(&surprise));
        let want = "## DHP 1.3 conformance

| implementation | result |
|---|---|
| <code>ours</code> | 2/2 passed |
| <code>reference</code> | 0/1 passed, 1 failed, 1 skipped |

2 passed, 1 failed, 0 errored, 1 skipped in 12.3s

| assertion | level | ours | reference |
|---|---|---|---|
| `fencing` | core | ✅ pass | ❌ **FAIL** |
| `fast-death-detection` | extended | ✅ pass | ⏭️ skip |

### Failures

- `fencing` on <code>reference</code> (failed): stale &#124; token wrote

### Against the expectations

- `fencing` on <code>reference</code>: expected to pass, failed
";
        assert_eq!(got, want, "\n{got}");
    }
}
