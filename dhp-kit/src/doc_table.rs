//! Markdown tables of the documents checked against what the code
//! declares: a test builds the rows it expects and gets back, row by row,
//! what the document has wrong (a missing, extra, changed or misplaced
//! row), so a failure names the mismatch instead of "out of date".

/// The cells of each row of the first table that starts on or after the
/// line holding `after` in `doc` (`after` may be in the header itself);
/// header and `|---|` line left out. `None` if `doc` has no such line or
/// no table follows it.
pub fn rows_after(doc: &str, after: &str) -> Option<Vec<Vec<String>>> {
    let at = doc.find(after)?;
    let rest = &doc[doc[..at].rfind('\n').map_or(0, |n| n + 1)..];
    let mut lines = rest.lines().skip_while(|l| !l.starts_with('|'));
    lines.next()?; // header
    let rule = lines.next()?;
    if !rule.starts_with("|-") && !rule.starts_with("| -") && !rule.starts_with("|:") {
        return None;
    }
    Some(lines.take_while(|l| l.starts_with('|')).map(cells).collect())
}

/// The cells of one table row, trimmed (`\|` kept inside its cell).
pub fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut out = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                if let Some(s) = out.last_mut() {
                    s.push('|')
                }
                chars.next();
            }
            '|' => out.push(String::new()),
            c => {
                if let Some(s) = out.last_mut() {
                    s.push(c)
                }
            }
        }
    }
    out.into_iter().map(|s| s.trim().to_string()).collect()
}

/// What `doc`'s table (`have`) gets wrong against `want`, rows keyed by
/// their first cell: rows missing, rows that name nothing declared, rows
/// whose cells differ (each cell named by `header`), and rows out of order.
pub fn mismatches(doc: &str, header: &[&str], have: &[Vec<String>], want: &[Vec<String>]) -> Vec<String> {
    let key = |r: &Vec<String>| r.first().cloned().unwrap_or_default();
    let mut out = Vec::new();
    for w in want {
        match have.iter().find(|h| key(h) == key(w)) {
            None => out.push(format!("{doc}: no row for {}", key(w))),
            Some(h) => {
                for (i, name) in header.iter().enumerate() {
                    let (a, b) = (h.get(i).map_or("", String::as_str), w.get(i).map_or("", String::as_str));
                    if a != b {
                        out.push(format!("{doc}: row {}: {name} is {a:?}, the code declares {b:?}", key(w)));
                    }
                }
            }
        }
    }
    for h in have {
        if !want.iter().any(|w| key(w) == key(h)) {
            out.push(format!("{doc}: row {} names nothing the code declares", key(h)));
        }
    }
    let order = |rows: &[Vec<String>], other: &[Vec<String>]| -> Vec<String> {
        rows.iter().map(key).filter(|k| other.iter().any(|r| key(r) == *k)).collect()
    };
    if out.is_empty() && order(have, want) != order(want, have) {
        out.push(format!("{doc}: rows out of order; the code's order is {:?}", order(want, have)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_read_and_each_mismatch_named() {
        let doc = "# T\n\n| a | b |\n|---|---|\n| `x` | 1 \\| 2 |\n| `y` | 3 |\n\nafter\n";
        let have = rows_after(doc, "# T").unwrap();
        assert_eq!(have, [vec!["`x`".to_string(), "1 | 2".into()], vec!["`y`".into(), "3".into()]]);
        let want = vec![vec!["`x`".to_string(), "1 | 2".into()], vec!["`z`".into(), "3".into()]];
        assert_eq!(
            mismatches("d.md", &["a", "b"], &have, &want),
            ["d.md: no row for `z`", "d.md: row `y` names nothing the code declares"]
        );
        let want = vec![vec!["`y`".to_string(), "4".into()], vec!["`x`".into(), "1 | 2".into()]];
        assert_eq!(
            mismatches("d.md", &["a", "b"], &have, &want),
            ["d.md: row `y`: b is \"3\", the code declares \"4\""]
        );
        let want = vec![vec!["`y`".to_string(), "3".into()], vec!["`x`".into(), "1 | 2".into()]];
        assert_eq!(mismatches("d.md", &["a", "b"], &have, &want).len(), 1, "order");
        assert!(rows_after(doc, "# nope").is_none());
        assert_eq!(rows_after(doc, "| a | b").unwrap(), have, "found by its header");
    }
}
