//! `--html DIR`: one self-contained `index.html` — a summary (the tally
//! per implementation and the run's metadata), the matrix of assertions ×
//! implementations grouped by level, each row with its rule and each cell
//! with its time, then every failure with its message and the adapter's
//! stderr tail, and the failures `--expect` pins. Written as well-formed
//! XML (polyglot HTML) so that tools can parse it as strictly as a browser
//! renders it.

use super::{assertions, implementations, tally, xml, Counts, Record};
use crate::suite::Level;

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}\
td.passed{background:#d4f4d4}td.failed{background:#f8c8c8;font-weight:bold}\
td.errored{background:#fde2b8;font-weight:bold}td.skipped{background:#eee;color:#666}\
td.expected{background:#f4f0c0}td.none{color:#999}td.rule{color:#444;font-size:.9em;max-width:40em}\
tr.level th{background:#f0f0f0}span.time{color:#666;font-size:.85em;font-weight:normal}\
pre{background:#f6f6f6;padding:.6em;white-space:pre-wrap}dl.meta dt{font-weight:bold}dl.meta dd{margin:0 0 .4em 1em}";

/// What the report says about the run itself.
#[derive(Debug, Clone, Default)]
pub struct RunMeta {
    /// The report's title.
    pub title: String,
    /// When the run started, ISO-8601 UTC.
    pub date: String,
    /// The command line, secrets masked.
    pub command: String,
    /// The commit dhp-conform was run from, if it could be found.
    pub conform_commit: Option<String>,
    /// Wall time of the run, in seconds.
    pub seconds: f64,
    /// The `--expect` file, if one was given.
    pub expectations: Option<String>,
}

fn anchor(imp: &str, assertion: &str) -> String {
    let raw = format!("{imp}--{assertion}");
    raw.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect()
}

fn rule_of(id: &str) -> &'static str {
    crate::catalogue::entries().into_iter().find(|e| e.id == id).map(|e| e.rule).unwrap_or("")
}

fn summary(o: &mut String, records: &[Record], describe: &[(String, String)], meta: &RunMeta) {
    let all = Counts::of(records);
    o.push_str(&format!("<p id=\"summary\"><strong>{}</strong> in {:.1} s</p>\n", xml(&all.line()), meta.seconds));
    o.push_str("<table id=\"totals\">\n<thead><tr><th>implementation</th><th>result</th><th>version and features</th></tr></thead>\n<tbody>\n");
    for label in implementations(records) {
        let c = Counts::of(records.iter().filter(|r| r.implementation == label));
        let d =
            describe.iter().find(|(l, _)| *l == label).map(|(_, d)| dhp_secrets::mask_secrets(d)).unwrap_or_default();
        o.push_str(&format!(
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>\n",
            xml(&label),
            xml(&tally(&c)),
            xml(&d)
        ));
    }
    o.push_str("</tbody>\n</table>\n<dl class=\"meta\" id=\"meta\">\n");
    let unknown = "unknown (not run from a git checkout)".to_string();
    let rows = [
        ("date", meta.date.clone()),
        ("command", meta.command.clone()),
        ("dhp-conform commit", meta.conform_commit.clone().unwrap_or(unknown)),
        ("duration", format!("{:.1} s", meta.seconds)),
        ("expectations", meta.expectations.clone().unwrap_or_else(|| "none (--expect not given)".into())),
    ];
    for (k, v) in rows {
        o.push_str(&format!("<dt>{k}</dt><dd><code>{}</code></dd>\n", xml(&v)));
    }
    o.push_str("</dl>\n");
}

fn matrix(o: &mut String, records: &[Record]) {
    let imps = implementations(records);
    let rows = assertions(records);
    o.push_str("<h2>Results</h2>\n<table id=\"matrix\">\n<thead><tr><th>assertion</th><th>rule</th>");
    for i in &imps {
        o.push_str(&format!("<th>{}</th>", xml(i)));
    }
    o.push_str("</tr></thead>\n<tbody>\n");
    for level in [Level::Core, Level::Extended, Level::Cross, Level::Explore] {
        let mine: Vec<&(String, Level)> = rows.iter().filter(|(_, l)| *l == level).collect();
        if mine.is_empty() {
            continue;
        }
        let c = Counts::of(records.iter().filter(|r| r.level == level));
        o.push_str(&format!(
            "<tr class=\"level\" id=\"level-{0}\"><th colspan=\"{1}\">{0} level — {2}</th></tr>\n",
            level.as_str(),
            imps.len() + 2,
            xml(&tally(&c))
        ));
        for (name, _) in mine {
            o.push_str(&format!(
                "<tr><td><code>{}</code></td><td class=\"rule\">{}</td>",
                xml(name),
                xml(rule_of(name))
            ));
            for i in &imps {
                match records.iter().find(|r| &r.implementation == i && &r.assertion == name) {
                    None => o.push_str("<td class=\"none\">—</td>"),
                    Some(r) => cell(o, r, i, name),
                }
            }
            o.push_str("</tr>\n");
        }
    }
    o.push_str("</tbody>\n<tfoot><tr><th>total</th><th></th>");
    for i in &imps {
        let c = Counts::of(records.iter().filter(|r| &r.implementation == i));
        o.push_str(&format!("<th>{}</th>", xml(&tally(&c))));
    }
    o.push_str("</tr></tfoot>\n</table>\n");
}

fn cell(o: &mut String, r: &Record, imp: &str, name: &str) {
    let word = r.word();
    let title = r.outcome.message().map(|m| format!(" title=\"{}\"", xml(super::first_line(m)))).unwrap_or_default();
    let time = format!(" <span class=\"time\">{:.2} s</span>", r.seconds);
    let text = match word {
        "expected" => format!("expected ({})", r.outcome.word()),
        w => w.to_string(),
    };
    if r.outcome.message().is_some() && word != "skipped" {
        o.push_str(&format!("<td class=\"{word}\"{title}><a href=\"#{}\">{text}</a>{time}</td>", anchor(imp, name)));
    } else {
        o.push_str(&format!("<td class=\"{word}\"{title}>{text}{time}</td>"));
    }
}

fn details(o: &mut String, r: &Record) {
    o.push_str(&format!(
        "<section class=\"{}\" id=\"{}\">\n<h3><code>{}</code> — {} ({})</h3>\n",
        if r.expected.is_some() { "expected" } else { "failure" },
        anchor(&r.implementation, &r.assertion),
        xml(&r.assertion),
        xml(&r.implementation),
        r.outcome.word(),
    ));
    if let Some(why) = &r.expected {
        o.push_str(&format!("<p>Pinned by <code>--expect</code>: {}</p>\n", xml(why)));
    }
    o.push_str(&format!("<pre class=\"message\">{}</pre>\n", xml(r.outcome.message().unwrap_or(""))));
    if r.stderr.is_empty() {
        o.push_str("<p>The adapter wrote nothing on stderr.</p>\n");
    } else {
        o.push_str(&format!(
            "<p>Adapter stderr (tail):</p>\n<pre class=\"stderr\">{}</pre>\n",
            xml(&r.stderr.join("\n"))
        ));
    }
    o.push_str("</section>\n");
}

/// The report. `describe` gives one line per implementation label
/// (version, features); `meta` the run's date, command, commit and time.
pub fn render(records: &[Record], describe: &[(String, String)], meta: &RunMeta) -> String {
    let mut o = String::new();
    o.push_str("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n");
    o.push_str(&format!(
        "<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        xml(&meta.title),
        xml(&meta.title)
    ));
    summary(&mut o, records, describe, meta);
    matrix(&mut o, records);
    o.push_str("<h2>Failures</h2>\n");
    let bad: Vec<&Record> = records.iter().filter(|r| r.is_bad()).collect();
    if bad.is_empty() {
        o.push_str("<p>None.</p>\n");
    }
    for r in bad {
        details(&mut o, r);
    }
    let known: Vec<&Record> = records.iter().filter(|r| r.expected.is_some()).collect();
    if !known.is_empty() {
        o.push_str("<h2>Expected failures (<code>--expect</code>)</h2>\n");
        for r in known {
            details(&mut o, r);
        }
    }
    o.push_str("</body>\n</html>\n");
    o
}

/// Write `DIR/index.html`.
pub fn write(dir: &std::path::Path, html: &str) -> std::io::Result<std::path::PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join("index.html");
    std::fs::write(&path, html)?;
    Ok(path)
}

/// Unix seconds as ISO-8601 UTC text to the second (`2026-12-02T13:40:00Z`).
pub fn iso_utc(unix: f64) -> String {
    let secs = unix.max(0.0).floor() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // civil date from days since 1970-01-01 (Howard Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    #[test]
    fn iso_utc_dates() {
        assert_eq!(super::iso_utc(0.0), "1970-01-01T00:00:00Z");
        assert_eq!(super::iso_utc(1_000_000_000.25), "2001-09-09T01:46:40Z");
        assert_eq!(super::iso_utc(1_709_210_096.0), "2024-02-29T12:34:56Z");
    }
}
