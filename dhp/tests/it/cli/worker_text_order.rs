//! dhp/worker-text-order.txt (the functions one `dhp work` runs, made by
//! scripts/worker-text-order.sh; dhp/build.rs links them together) names
//! functions that exist: each line a section pattern, and most of them the
//! path of a symbol in the `dhp` just built (hashes left out). A worker path
//! renamed or rewritten since the list was made fails here: rerun the
//! script. And the `dhp` just built has them together, in the output
//! section `.text.dhp_worker` just before `.text`.
use std::collections::HashSet;
use std::process::Command;

/// `(address, size)` of the section `name` of `bin`, from `readelf -S -W`.
fn section(bin: &str, name: &str) -> Option<(u64, u64)> {
    let out = Command::new("readelf").args(["-S", "-W", bin]).output().expect("readelf");
    assert!(out.status.success(), "readelf: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    // `  [17] .text.dhp_worker  PROGBITS  <addr> <off> <size> …`
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split(']').nth(1)?.split_whitespace().collect();
        (f.first() == Some(&name))
            .then(|| Some((u64::from_str_radix(f[2], 16).ok()?, u64::from_str_radix(f[4], 16).ok()?)))?
    })
}

#[test]
fn the_worker_functions_are_linked_together_before_text() {
    let bin = env!("CARGO_BIN_EXE_dhp");
    if std::env::var("DHP_TEXT_ORDER").as_deref() == Ok("off") {
        assert!(section(bin, ".text.dhp_worker").is_none(), "DHP_TEXT_ORDER=off links without the order");
        return;
    }
    let (at, size) = section(bin, ".text.dhp_worker").expect("dhp/build.rs's .text.dhp_worker section");
    let (text_at, _) = section(bin, ".text").expect(".text");
    assert!(size > 100_000 && at + size <= text_at, "{size} bytes at {at:#x}, .text at {text_at:#x}");
    // The worker's entry points are inside it (a pattern list that matched
    // nothing would leave the section empty, one that matched everything
    // would leave .text empty).
    let out = Command::new("nm").args(["--defined-only", bin]).output().expect("nm");
    let inside = |needle: &str| {
        String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains(needle)).any(|l| {
            u64::from_str_radix(l.split_whitespace().next().unwrap_or(""), 16).is_ok_and(|a| a >= at && a < at + size)
        })
    };
    for f in ["checkpoint_step", "append_checkpoint", "heartbeat"] {
        assert!(inside(f), "{f} is not in .text.dhp_worker");
    }
}

/// `name` with its legacy-mangling hash (`…17h<16 hex>E`) cut off, if it
/// has one.
fn without_hash(name: &str) -> Option<&str> {
    let cut = name.len().checked_sub(20).filter(|&c| name.is_char_boundary(c))?;
    let tail = &name[cut..];
    (tail.starts_with("17h") && tail.ends_with('E') && tail[3..19].bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| &name[..cut])
}

#[test]
fn the_worker_text_order_names_functions_of_this_dhp() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/worker-text-order.txt");
    let text = std::fs::read_to_string(file).expect("dhp/worker-text-order.txt");
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    let all: HashSet<&str> = lines.iter().copied().collect();
    // Exact names carry the release build's hashes, which an unoptimised
    // build does not share: each must come with its hash-free pattern, and
    // the patterns are what this build is checked against.
    let mut patterns = Vec::new();
    for l in &lines {
        let name = l.strip_prefix(".text.").unwrap_or_else(|| panic!("not a .text section pattern: {l}"));
        assert!(
            name.trim_end_matches('*').chars().all(|c| c.is_ascii_alphanumeric() || "_.$".contains(c)),
            "not a symbol pattern: {l}"
        );
        match without_hash(name) {
            Some(path) => assert!(all.contains(format!(".text.{path}*").as_str()), "{l} without its pattern"),
            None => patterns.push(name),
        }
    }
    assert!(patterns.len() > 500, "{} patterns: regenerate with scripts/worker-text-order.sh", patterns.len());
    let out = Command::new("nm").args(["--defined-only", env!("CARGO_BIN_EXE_dhp")]).output().expect("nm");
    assert!(out.status.success(), "nm: {}", String::from_utf8_lossy(&out.stderr));
    let mut exact = HashSet::new();
    let mut paths = HashSet::new();
    for sym in String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.split_whitespace().nth(2)) {
        exact.insert(sym.to_string());
        if let Some(path) = without_hash(sym) {
            paths.insert(path.to_string());
        }
    }
    let found = patterns
        .iter()
        .filter(|name| match name.strip_suffix('*') {
            Some(path) => paths.contains(path),
            None => exact.contains(**name),
        })
        .count();
    // This test builds `dhp` unoptimised: some release functions are inlined
    // away there, others only exist there (84 % matched when the list was made).
    let share = found as f64 / patterns.len() as f64;
    assert!(
        share >= 0.7,
        "{found} of {} patterns name a function of this dhp: rerun scripts/worker-text-order.sh",
        patterns.len()
    );
}
