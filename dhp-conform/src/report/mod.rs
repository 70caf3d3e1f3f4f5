//! Outcome records and the ways they are reported: the closing line, the
//! JSON summary, JUnit XML and the Markdown comparison table here; the
//! HTML report, the Markdown report and badges in the submodules.

pub mod badge;
pub mod html;
pub mod markdown;

use crate::suite::{Level, Outcome};
use dhp_secrets::mask_secrets;
use serde_json::{json, Value};

/// `o` with every secret of a store location in its message masked
/// (dhp-core's [`mask_secrets`]: a URL's `user:pw@`, `password=`,
/// `sslpassword=`, …): what the console, the JSON summary and every report
/// show of an outcome.
pub fn masked(o: Outcome) -> Outcome {
    match o {
        Outcome::Passed => Outcome::Passed,
        Outcome::Failed(m) => Outcome::Failed(mask_secrets(&m)),
        Outcome::Errored(m) => Outcome::Errored(mask_secrets(&m)),
        Outcome::Skipped(m) => Outcome::Skipped(mask_secrets(&m)),
    }
}
use std::sync::Mutex;

/// One assertion's outcome against one implementation (or pair).
#[derive(Debug, Clone)]
pub struct Record {
    /// Implementation label, or `A->B` for cross assertions.
    pub implementation: String,
    /// The assertion id.
    pub assertion: String,
    /// The level it ran at.
    pub level: Level,
    /// How it ended.
    pub outcome: Outcome,
    /// Wall time it took.
    pub seconds: f64,
    /// The adapter's stderr lines written while the assertion ran (kept
    /// for failed and errored outcomes).
    pub stderr: Vec<String>,
    /// For a failed or errored outcome that `--expect` pins: the pin's
    /// reason. Every report shows it as *expected*, not as a failure.
    pub expected: Option<String>,
}

impl Record {
    /// `passed`, `failed`, `errored`, `skipped`, or `expected` for a
    /// failure or error `--expect` pins (class names, badges, counts).
    pub fn word(&self) -> &'static str {
        match (&self.outcome, &self.expected) {
            (Outcome::Failed(_) | Outcome::Errored(_), Some(_)) => "expected",
            (o, _) => o.word(),
        }
    }

    /// A failure or error `--expect` does not pin: what a report shows
    /// in red and the exit status counts.
    pub fn is_bad(&self) -> bool {
        matches!(self.outcome, Outcome::Failed(_) | Outcome::Errored(_)) && self.expected.is_none()
    }
}

/// Records collected by trials running on several threads.
#[derive(Debug, Default)]
pub struct Records(Mutex<Vec<Record>>);

impl Records {
    /// Add one (from any thread), every secret of a store location in its
    /// message and stderr masked ([`masked`]): reports are published.
    pub fn push(&self, mut r: Record) {
        r.outcome = masked(r.outcome);
        for line in &mut r.stderr {
            *line = mask_secrets(line);
        }
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(r);
    }

    /// A copy of the records so far, in the order they were pushed.
    pub fn snapshot(&self) -> Vec<Record> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Passed assertions.
    pub passed: usize,
    /// Failed: a guarantee broken.
    pub failed: usize,
    /// Errored: no verdict (the adapter exchange broke).
    pub errored: usize,
    /// Skipped: a feature not declared.
    pub skipped: usize,
    /// Failed or errored as `--expect` pins it (not counted as failed or
    /// errored).
    pub expected: usize,
}

impl Counts {
    /// Count `records` by outcome.
    pub fn of<'a>(records: impl IntoIterator<Item = &'a Record>) -> Counts {
        let mut c = Counts::default();
        for r in records {
            match (&r.outcome, &r.expected) {
                (Outcome::Failed(_) | Outcome::Errored(_), Some(_)) => c.expected += 1,
                (Outcome::Passed, _) => c.passed += 1,
                (Outcome::Failed(_), None) => c.failed += 1,
                (Outcome::Errored(_), None) => c.errored += 1,
                (Outcome::Skipped(_), _) => c.skipped += 1,
            }
        }
        c
    }

    /// Assertions that ran (skipped ones did not).
    pub fn run(&self) -> usize {
        self.passed + self.failed + self.errored + self.expected
    }

    /// `N passed, N failed, N errored, N skipped` (and `, N expected` when
    /// `--expect` pinned failures).
    pub fn line(&self) -> String {
        let mut s = format!(
            "{} passed, {} failed, {} errored, {} skipped",
            self.passed, self.failed, self.errored, self.skipped
        );
        if self.expected > 0 {
            s.push_str(&format!(", {} expected (failed or errored as --expect pins)", self.expected));
        }
        s
    }

    /// Nothing failed or errored (the run exits 0).
    pub fn ok(&self) -> bool {
        self.failed == 0 && self.errored == 0
    }
}

/// The machine-readable summary printed last with `--format json`.
pub fn json_summary(records: &[Record], implementations: &[(String, String)], seconds: f64) -> Value {
    let c = Counts::of(records);
    json!({
        "type": "dhp-conform",
        "event": "summary",
        "implementations": implementations.iter().map(|(l, d)| json!({"label": l, "describe": mask_secrets(d)})).collect::<Vec<_>>(),
        "passed": c.passed, "failed": c.failed, "errored": c.errored, "skipped": c.skipped,
        "expected": c.expected, "run": c.run(), "tally": tally(&c),
        "seconds": seconds,
        "results": records.iter().map(|r| json!({
            "implementation": r.implementation,
            "assertion": r.assertion,
            "level": r.level.as_str(),
            "outcome": r.outcome.word(),
            "expected": r.expected,
            "message": r.outcome.message(),
            "seconds": r.seconds,
            "stderr": r.stderr,
        })).collect::<Vec<_>>(),
    })
}

/// Judged text for XML 1.0 and HTML (junit.xml, the HTML report): the
/// shared escaping, which also replaces characters XML 1.0 forbids.
pub(crate) fn xml(s: &str) -> String {
    dhp_markup::xml(s)
}

/// JUnit XML: one `<testsuite>` per implementation; failed is
/// `<failure>`, errored `<error>`, skipped `<skipped>`.
pub fn junit(records: &[Record]) -> String {
    let mut suites: Vec<(String, Vec<&Record>)> = Vec::new();
    for r in records {
        match suites.iter_mut().find(|(n, _)| *n == r.implementation) {
            Some((_, v)) => v.push(r),
            None => suites.push((r.implementation.clone(), vec![r])),
        }
    }
    let all = Counts::of(records);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"dhp-conform\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n",
        records.len(),
        all.failed,
        all.errored,
        all.skipped + all.expected
    ));
    for (name, rs) in suites {
        let c = Counts::of(rs.iter().copied());
        let time: f64 = rs.iter().map(|r| r.seconds).sum();
        out.push_str(&format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{time:.3}\">\n",
            xml(&name),
            rs.len(),
            c.failed,
            c.errored,
            c.skipped + c.expected
        ));
        for r in rs {
            out.push_str(&format!(
                "    <testcase name=\"{}\" classname=\"dhp-conform.{}.{}\" time=\"{:.3}\"",
                xml(&r.assertion),
                xml(&name),
                r.level.as_str(),
                r.seconds
            ));
            match &r.outcome {
                // JUnit has no expected failure: a pinned one is skipped, with why
                Outcome::Failed(m) | Outcome::Errored(m) if r.expected.is_some() => out.push_str(&format!(
                    ">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                    xml(&format!(
                        "expected {} (--expect: {}): {}",
                        r.outcome.word(),
                        r.expected.as_deref().unwrap_or(""),
                        first_line(m)
                    ))
                )),
                Outcome::Passed => out.push_str("/>\n"),
                Outcome::Failed(m) => out.push_str(&format!(
                    ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>\n",
                    xml(first_line(m)),
                    xml(m)
                )),
                Outcome::Errored(m) => out.push_str(&format!(
                    ">\n      <error message=\"{}\">{}</error>\n    </testcase>\n",
                    xml(first_line(m)),
                    xml(m)
                )),
                Outcome::Skipped(m) => {
                    out.push_str(&format!(">\n      <skipped message=\"{}\"/>\n    </testcase>\n", xml(m)))
                }
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

/// Implementation labels in the order they first appear.
pub fn implementations(records: &[Record]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in records {
        if !out.contains(&r.implementation) {
            out.push(r.implementation.clone());
        }
    }
    out
}

/// Assertion names with their levels, in the order they first appear.
pub fn assertions(records: &[Record]) -> Vec<(String, Level)> {
    let mut out: Vec<(String, Level)> = Vec::new();
    for r in records {
        if !out.iter().any(|(n, _)| n == &r.assertion) {
            out.push((r.assertion.clone(), r.level));
        }
    }
    out
}

/// `passed/run` (skipped ones are not run), with what else happened:
/// the one count every report and badge shows.
pub fn tally(c: &Counts) -> String {
    let mut s = format!("{}/{} passed", c.passed, c.run());
    if c.expected > 0 {
        s.push_str(&format!(", {} expected", c.expected));
    }
    if c.failed > 0 {
        s.push_str(&format!(", {} failed", c.failed));
    }
    if c.errored > 0 {
        s.push_str(&format!(", {} errored", c.errored));
    }
    if c.skipped > 0 {
        s.push_str(&format!(", {} skipped", c.skipped));
    }
    s
}

pub(crate) fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

fn cell(r: Option<&Record>) -> &'static str {
    match r.map(|r| (&r.outcome, r.expected.is_some())) {
        None => "—",
        Some((Outcome::Passed, _)) => "pass",
        Some((Outcome::Failed(_), true)) => "expected fail",
        Some((Outcome::Errored(_), true)) => "expected error",
        Some((Outcome::Failed(_), false)) => "**FAIL**",
        Some((Outcome::Errored(_), false)) => "**error**",
        Some((Outcome::Skipped(_), _)) => "skip",
    }
}

/// Markdown table: assertions × implementations, then a totals row.
/// `rows` gives the assertion order with levels; `columns` the labels.
pub fn compare_table(records: &[Record], rows: &[(String, Level)], columns: &[String]) -> String {
    let mut out = String::new();
    out.push_str("| assertion | level |");
    for c in columns {
        out.push_str(&format!(" {c} |"));
    }
    out.push_str("\n|---|---|");
    for _ in columns {
        out.push_str("---|");
    }
    out.push('\n');
    for (name, level) in rows {
        out.push_str(&format!("| {name} | {} |", level.as_str()));
        for c in columns {
            let r = records.iter().find(|r| &r.implementation == c && &r.assertion == name);
            out.push_str(&format!(" {} |", cell(r)));
        }
        out.push('\n');
    }
    out.push_str("| **total** | |");
    for c in columns {
        let n = Counts::of(records.iter().filter(|r| &r.implementation == c));
        out.push_str(&format!(" {} |", tally(&n)));
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(imp: &str, name: &str, o: Outcome) -> Record {
        Record {
            implementation: imp.into(),
            assertion: name.into(),
            level: Level::Core,
            outcome: o,
            seconds: 0.5,
            stderr: vec![],
            expected: None,
        }
    }

    #[test]
    fn counts_and_line() {
        let rs = vec![
            rec("a", "x", Outcome::Passed),
            rec("a", "y", Outcome::Failed("boom".into())),
            rec("a", "z", Outcome::Errored("hang".into())),
            rec("a", "w", Outcome::Skipped("unsupported".into())),
        ];
        let c = Counts::of(&rs);
        assert_eq!(c.line(), "1 passed, 1 failed, 1 errored, 1 skipped");
        assert!(!c.ok());
    }

    #[test]
    fn junit_distinguishes_failure_error_skip_and_escapes() {
        let rs = vec![
            rec("ours", "x", Outcome::Passed),
            rec("ours", "y", Outcome::Failed("got <1> & \"2\"".into())),
            rec("ours", "z", Outcome::Errored("hang".into())),
            rec("ref", "w", Outcome::Skipped("unsupported".into())),
        ];
        let x = junit(&rs);
        assert!(x.contains("<testsuite name=\"ours\" tests=\"3\" failures=\"1\" errors=\"1\" skipped=\"0\""), "{x}");
        assert!(x.contains("<failure message=\"got &lt;1&gt; &amp; &quot;2&quot;\">"), "{x}");
        assert!(x.contains("<error message=\"hang\">"), "{x}");
        assert!(x.contains("<skipped message=\"unsupported\"/>"), "{x}");
        assert!(
            x.contains("<testsuites name=\"dhp-conform\" tests=\"4\" failures=\"1\" errors=\"1\" skipped=\"1\">"),
            "{x}"
        );
    }

    /// What a hostile adapter puts in its error messages.
    const HOSTILE: &str = "\u{1b}[31mred\u{1b}[0m \u{FFFE}\u{FFFF}\u{0}\u{8} <script>alert(1)</script> \
        <img src=x onerror=alert(1)> ![p](https://attacker.test/p.png) <details open><summary>✅ all passed \
        `tick` | pipe \u{202E}bidi\n# heading";

    #[test]
    fn junit_is_xml_whatever_the_adapter_writes() {
        let long = HOSTILE.repeat(200);
        let rs = vec![
            rec("ours", "y", Outcome::Failed(HOSTILE.into())),
            rec("ours", "z", Outcome::Errored(long)),
            rec("ours", "w", Outcome::Skipped(HOSTILE.into())),
        ];
        let x = junit(&rs);
        let doc = roxmltree::Document::parse(&x).unwrap_or_else(|e| panic!("junit.xml does not parse: {e}\n{x}"));
        let failure = doc.descendants().find(|n| n.has_tag_name("failure")).expect("a failure");
        let msg = failure.attribute("message").unwrap();
        assert!(msg.contains("<script>") && msg.contains("[31mred"), "read back as text: {msg}");
        assert!(!msg.contains('\u{1b}') && !msg.contains('\u{FFFE}'), "{msg:?}");
        assert!(!doc.descendants().any(|n| n.has_tag_name("script") || n.has_tag_name("img")));
    }

    #[test]
    fn markdown_summary_shows_hostile_text_as_text() {
        let rs = vec![rec("ours", "y", Outcome::Failed(HOSTILE.into()))];
        let md = markdown::render(&rs, 1.0, None);
        for raw in ["<script", "<img", "![", "<details", "<summary", "`tick`", "| pipe", "\n# heading", "\u{1b}"] {
            assert!(!md.contains(raw), "{raw:?} raw in the summary:\n{md}");
        }
        assert!(md.contains("&lt;script&gt;"), "{md}");
        let failures = md.split("### Failures").nth(1).unwrap();
        assert_eq!(failures.trim().lines().count(), 1, "one line per failure: {failures}");
    }

    #[test]
    fn table_has_a_cell_per_pair() {
        let rs = vec![rec("a", "x", Outcome::Passed), rec("b", "x", Outcome::Failed("f".into()))];
        let t = compare_table(&rs, &[("x".into(), Level::Core), ("y".into(), Level::Core)], &["a".into(), "b".into()]);
        assert!(t.contains("| x | core | pass | **FAIL** |"), "{t}");
        assert!(t.contains("| y | core | — | — |"), "{t}");
        assert!(t.contains("| **total** | | 1/1 passed | 0/1 passed, 1 failed |"), "{t}");
    }
}
