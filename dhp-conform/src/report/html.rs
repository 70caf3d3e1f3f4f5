//! `--html DIR`: one self-contained `index.html` — the matrix of
//! assertions × implementations, then every failure with its message and
//! the adapter's stderr tail. Written as well-formed XML (polyglot HTML)
//! so that tools can parse it as strictly as a browser renders it.

use super::{assertions, implementations, tally, xml, Counts, Record};
use crate::suite::Outcome;

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left}\
td.passed{background:#d4f4d4}td.failed{background:#f8c8c8;font-weight:bold}\
td.errored{background:#fde2b8;font-weight:bold}td.skipped{background:#eee;color:#666}\
td.none{color:#999}pre{background:#f6f6f6;padding:.6em;white-space:pre-wrap}";

fn anchor(imp: &str, assertion: &str) -> String {
    let raw = format!("{imp}--{assertion}");
    raw.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect()
}

/// The report. `title` names the run; `describe` gives one line per
/// implementation label (version, features).
pub fn render(records: &[Record], describe: &[(String, String)], title: &str) -> String {
    let imps = implementations(records);
    let rows = assertions(records);
    let mut o = String::new();
    o.push_str("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n");
    o.push_str(&format!(
        "<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        xml(title),
        xml(title)
    ));
    o.push_str("<h2>Implementations</h2>\n<ul>\n");
    for (label, d) in describe {
        let d = dhp_secrets::mask_secrets(d);
        o.push_str(&format!("<li><code>{}</code>: {}</li>\n", xml(label), xml(&d)));
    }
    o.push_str("</ul>\n<h2>Results</h2>\n<table id=\"matrix\">\n<thead><tr><th>assertion</th><th>level</th>");
    for i in &imps {
        o.push_str(&format!("<th>{}</th>", xml(i)));
    }
    o.push_str("</tr></thead>\n<tbody>\n");
    for (name, level) in &rows {
        o.push_str(&format!("<tr><td><code>{}</code></td><td>{}</td>", xml(name), level.as_str()));
        for i in &imps {
            match records.iter().find(|r| &r.implementation == i && &r.assertion == name) {
                None => o.push_str("<td class=\"none\">—</td>"),
                Some(r) => {
                    let word = r.outcome.word();
                    let title = r
                        .outcome
                        .message()
                        .map(|m| format!(" title=\"{}\"", xml(super::first_line(m))))
                        .unwrap_or_default();
                    if matches!(r.outcome, Outcome::Failed(_) | Outcome::Errored(_)) {
                        o.push_str(&format!(
                            "<td class=\"{word}\"{title}><a href=\"#{}\">{word}</a></td>",
                            anchor(i, name)
                        ));
                    } else {
                        o.push_str(&format!("<td class=\"{word}\"{title}>{word}</td>"));
                    }
                }
            }
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody>\n<tfoot><tr><th>total</th><th></th>");
    for i in &imps {
        let c = Counts::of(records.iter().filter(|r| &r.implementation == i));
        o.push_str(&format!("<th>{}</th>", xml(&tally(&c))));
    }
    o.push_str("</tr></tfoot>\n</table>\n");
    let bad: Vec<&Record> =
        records.iter().filter(|r| matches!(r.outcome, Outcome::Failed(_) | Outcome::Errored(_))).collect();
    o.push_str("<h2>Failures</h2>\n");
    if bad.is_empty() {
        o.push_str("<p>None.</p>\n");
    }
    for r in bad {
        o.push_str(&format!(
            "<section class=\"failure\" id=\"{}\">\n<h3><code>{}</code> — {} ({})</h3>\n<pre class=\"message\">{}</pre>\n",
            anchor(&r.implementation, &r.assertion),
            xml(&r.assertion),
            xml(&r.implementation),
            r.outcome.word(),
            xml(r.outcome.message().unwrap_or(""))
        ));
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
