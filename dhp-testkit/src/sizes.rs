//! The size check (issue 46, item 7): no non-test `.rs` file over
//! [`MAX_FILE_LINES`] lines and no function over [`MAX_FN_LINES`], except
//! the offenders of a committed allowlist (`scripts/sizes-allowlist.txt`),
//! each with its size when listed: an entry may shrink, never grow, and an
//! entry that no longer offends must be removed. The list is the to-do of
//! the splits still owed.
//!
//! Sizes are read from rustfmt-formatted text: a function runs from its
//! `fn` line to the first later line that is its indentation plus `}`; a
//! `#[cfg(test)] mod … { … }` block is test code and not counted (neither
//! its lines in the file's size nor its functions).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Most lines of a non-test source file.
pub const MAX_FILE_LINES: usize = 700;
/// Most lines of a function.
pub const MAX_FN_LINES: usize = 120;

/// What is measured: a file (its non-test lines) or one of its functions.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Item {
    /// The file's non-test lines.
    File,
    /// A function, by name.
    Fn(String),
}

/// A measured size that exceeds its limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offender {
    /// Path relative to the workspace root.
    pub path: String,
    /// The file or one of its functions.
    pub item: Item,
    /// Its lines.
    pub lines: usize,
}

impl Offender {
    /// The allowlist line for it: `PATH file N` or `PATH fn NAME N`.
    pub fn entry(&self) -> String {
        match &self.item {
            Item::File => format!("{} file {}", self.path, self.lines),
            Item::Fn(name) => format!("{} fn {} {}", self.path, name, self.lines),
        }
    }
}

fn indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// The name of the function a line declares, if it starts one.
fn fn_name(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    if let Some(r) = rest.strip_prefix("pub") {
        rest = match r.strip_prefix('(') {
            Some(r) => r.split_once(')')?.1.trim_start(),
            None if r.starts_with(' ') => r.trim_start(),
            None => return None,
        };
    }
    for q in ["const ", "async ", "unsafe ", "extern \"C\" "] {
        rest = rest.strip_prefix(q).unwrap_or(rest);
    }
    let name = rest.strip_prefix("fn ")?;
    let end = name.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(name.len());
    (end > 0).then(|| &name[..end])
}

/// The index of the line closing the block opened at `start` (the first
/// later line that is `start`'s indentation plus `}`), if any.
fn block_end(lines: &[&str], start: usize) -> Option<usize> {
    let close = format!("{}}}", indent(lines[start]));
    (start + 1..lines.len()).find(|&i| lines[i].trim_end() == close)
}

/// Line ranges of `#[cfg(test)] mod … {` blocks.
fn test_blocks(lines: &[&str]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() == "#[cfg(test)]" {
            let mut j = i + 1;
            while j < lines.len() && lines[j].trim_start().starts_with("#[") {
                j += 1;
            }
            let decl = lines.get(j).map_or("", |l| l.trim());
            let is_mod =
                decl.starts_with("mod ") || decl.starts_with("pub mod ") || decl.starts_with("pub(crate) mod ");
            if is_mod && decl.ends_with('{') {
                if let Some(end) = block_end(lines, j) {
                    out.push((i, end));
                    i = end + 1;
                    continue;
                }
            }
        }
        i += 1;
    }
    out
}

/// The sizes of `text`: its non-test lines and each function's lines.
pub fn measure(text: &str) -> (usize, Vec<(String, usize)>) {
    let lines: Vec<&str> = text.lines().collect();
    let tests = test_blocks(&lines);
    let in_test = |i: usize| tests.iter().any(|(a, b)| (*a..=*b).contains(&i));
    let test_lines: usize = tests.iter().map(|(a, b)| b - a + 1).sum();
    let mut fns = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(name) = fn_name(line) else { continue };
        if in_test(i) {
            continue;
        }
        // A declaration without a body (a trait's `fn x(&self);`) ends in
        // `;` before any `{`.
        let body = lines[i..].iter().map(|l| l.trim_end()).find(|l| l.ends_with('{') || l.ends_with(';'));
        if body.is_some_and(|l| l.ends_with(';')) || line.trim_end().ends_with('}') {
            continue;
        }
        if let Some(end) = block_end(&lines, i) {
            fns.push((name.to_string(), end - i + 1));
        }
    }
    (lines.len() - test_lines, fns)
}

/// Whether `rel` (relative to the root) is test code: under a `tests`
/// directory, or a `tests.rs` / `*_tests.rs` module file.
pub fn is_test_path(rel: &Path) -> bool {
    let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or("");
    rel.components().any(|c| c.as_os_str() == "tests") || name == "tests.rs" || name.ends_with("_tests.rs")
}

/// The `.rs` files under `root` that are not test code, relative to it
/// (skipping `target`, hidden directories and Python virtualenvs).
pub fn source_files(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut dirs = vec![PathBuf::new()];
    while let Some(rel) = dirs.pop() {
        for e in std::fs::read_dir(root.join(&rel))? {
            let e = e?;
            let name = e.file_name();
            let name = name.to_string_lossy();
            let path = rel.join(&*name);
            if e.file_type()?.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    dirs.push(path);
                }
            } else if name.ends_with(".rs") && !is_test_path(&path) {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Every offender under `root`.
pub fn offenders(root: &Path) -> std::io::Result<Vec<Offender>> {
    let mut out = Vec::new();
    for rel in source_files(root)? {
        let text = std::fs::read_to_string(root.join(&rel))?;
        let path = rel.to_string_lossy().into_owned();
        let (lines, fns) = measure(&text);
        if lines > MAX_FILE_LINES {
            out.push(Offender { path: path.clone(), item: Item::File, lines });
        }
        for (name, n) in fns {
            if n > MAX_FN_LINES {
                out.push(Offender { path: path.clone(), item: Item::Fn(name), lines: n });
            }
        }
    }
    Ok(out)
}

/// Parse the allowlist: `PATH file N` or `PATH fn NAME N` per line; `#`
/// comments and blank lines skipped. Errors name the bad line.
pub fn parse_allowlist(text: &str) -> Result<BTreeMap<(String, Item), usize>, String> {
    let mut out = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = || format!("allowlist line {}: {line:?} is not `PATH file N` or `PATH fn NAME N`", n + 1);
        let f: Vec<&str> = line.split_whitespace().collect();
        let (key, size) = match f.as_slice() {
            [path, "file", size] => ((path.to_string(), Item::File), size),
            [path, "fn", name, size] => ((path.to_string(), Item::Fn(name.to_string())), size),
            _ => return Err(bad()),
        };
        let size: usize = size.parse().map_err(|_| bad())?;
        if out.insert(key, size).is_some() {
            return Err(format!("allowlist line {}: {line:?} is listed twice", n + 1));
        }
    }
    Ok(out)
}

/// The problems of `found` against `allowed`: an offender not listed, one
/// grown past its entry, an entry that no longer offends. Empty: the check
/// passes.
pub fn judge(found: &[Offender], allowed: &BTreeMap<(String, Item), usize>) -> Vec<String> {
    let mut problems = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for o in found {
        let key = (o.path.clone(), o.item.clone());
        match allowed.get(&key) {
            None => problems.push(format!("{}: over the limit and not in the allowlist (split it)", o.entry())),
            Some(&max) if o.lines > max => problems
                .push(format!("{}: grew past its allowlist entry of {max} lines (it may only shrink)", o.entry())),
            Some(_) => {}
        }
        seen.insert(key);
    }
    for (path, item) in allowed.keys() {
        if !seen.contains(&(path.clone(), item.clone())) {
            let what = match item {
                Item::File => format!("{path} file"),
                Item::Fn(name) => format!("{path} fn {name}"),
            };
            problems.push(format!("{what}: no longer over the limit (or gone): remove it from the allowlist"));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(name: &str, n: usize, ind: &str) -> String {
        let mut s = format!("{ind}pub(crate) async fn {name}(x: u8) -> u8 {{\n");
        for _ in 0..n.saturating_sub(2) {
            s.push_str(&format!("{ind}    let _ = x;\n"));
        }
        s + &format!("{ind}}}\n")
    }

    #[test]
    fn functions_are_measured_from_fn_to_their_closing_brace() {
        let text = format!(
            "trait T {{\n    fn decl(&self);\n    fn short(&self) {{}}\n}}\nimpl X {{\n{}}}\n{}",
            body("inner", 5, "    "),
            body("top", 130, "")
        );
        let (lines, fns) = measure(&text);
        assert_eq!(lines, text.lines().count());
        assert_eq!(fns, vec![("inner".to_string(), 5), ("top".to_string(), 130)]);
    }

    #[test]
    fn test_modules_are_not_counted() {
        let text = format!("fn a() {{\n}}\n#[cfg(test)]\nmod tests {{\n{}}}\n", body("long_test", 200, "    "));
        let (lines, fns) = measure(&text);
        assert_eq!((lines, fns), (2, vec![("a".to_string(), 2)]));
        assert!(is_test_path(Path::new("x/tests/it/main.rs")) && is_test_path(Path::new("src/led_tests.rs")));
        assert!(!is_test_path(Path::new("src/testing.rs")));
    }

    #[test]
    fn the_allowlist_ratchets() {
        let allowed = parse_allowlist("# c\na.rs file 800\na.rs fn big 150\nb.rs fn gone 130\n").unwrap();
        let o = |item, lines| Offender { path: "a.rs".into(), item, lines };
        // Within the entries, except the stale one.
        let found = vec![o(Item::File, 790), o(Item::Fn("big".into()), 150)];
        assert_eq!(judge(&found, &allowed).len(), 1, "{:?}", judge(&found, &allowed));
        // Grown, new, stale: three problems.
        let found = vec![o(Item::File, 801), o(Item::Fn("new".into()), 121), o(Item::Fn("big".into()), 150)];
        let p = judge(&found, &allowed);
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(p[0].contains("grew") && p[1].contains("not in the allowlist") && p[2].contains("remove"));
        assert!(parse_allowlist("a.rs fn x\n").is_err() && parse_allowlist("a.rs file 1\na.rs file 2\n").is_err());
    }
}
