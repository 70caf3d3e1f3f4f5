//! dhp/worker-text-order.txt (the `DHP_TEXT_ORDER=gold` build's section
//! order, made by scripts/worker-text-order.sh) names functions that exist:
//! each line a gold section pattern, and most of them the path of a symbol
//! in the `dhp` just built (hashes left out). A worker path renamed or
//! rewritten since the list was made fails here: rerun the script.
use std::collections::HashSet;

#[test]
fn the_worker_text_order_names_functions_of_this_dhp() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/worker-text-order.txt");
    let text = std::fs::read_to_string(file).expect("dhp/worker-text-order.txt");
    let patterns: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(patterns.len() > 500, "{} patterns: regenerate with scripts/worker-text-order.sh", patterns.len());
    let out =
        std::process::Command::new("nm").args(["--defined-only", env!("CARGO_BIN_EXE_dhp")]).output().expect("nm");
    assert!(out.status.success(), "nm: {}", String::from_utf8_lossy(&out.stderr));
    let mut exact = HashSet::new();
    let mut paths = HashSet::new();
    for sym in String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.split_whitespace().nth(2)) {
        exact.insert(sym.to_string());
        // Legacy mangling: `…17h<16 hex>E`; the list keeps the path before it.
        if let Some(cut) = sym.len().checked_sub(20).filter(|&c| sym.is_char_boundary(c) && sym[c..].starts_with("17h"))
        {
            paths.insert(sym[..cut].to_string());
        }
    }
    let mut found = 0;
    for p in &patterns {
        let name = p.strip_prefix(".text.").unwrap_or_else(|| panic!("not a .text section pattern: {p}"));
        assert!(
            name.trim_end_matches('*').chars().all(|c| c.is_ascii_alphanumeric() || "_.$".contains(c)),
            "not a symbol pattern: {p}"
        );
        let hit = match name.strip_suffix('*') {
            Some(path) => paths.contains(path),
            None => exact.contains(name),
        };
        found += usize::from(hit);
    }
    // This test builds `dhp` unoptimised: some release functions are inlined
    // away there, others only exist there (84 % matched when the list was made).
    let share = found as f64 / patterns.len() as f64;
    assert!(
        share >= 0.7,
        "{found} of {} patterns name a function of this dhp: rerun scripts/worker-text-order.sh",
        patterns.len()
    );
}
