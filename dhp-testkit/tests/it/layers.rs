//! Who may depend on whom (docs/architecture.md): every workspace crate's
//! normal dependencies on other workspace crates are within its row below,
//! as cargo's own metadata says. A new edge is a decision: draw it in
//! docs/architecture.md and add it here.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// The allowed normal dependencies among workspace crates.
const ALLOWED: &[(&str, &[&str])] = &[
    // The protocol library: only the secrets crate (not even the feature
    // unification of workspace-hack, which would pull the harnesses' crates).
    ("dhp-core", &["dhp-secrets"]),
    // The program on it.
    ("dhp", &["dhp-core", "dhp-workload", "workspace-hack"]),
    // dhp-rs under test.
    ("dhp-adapter", &["dhp-core", "dhp-testkit"]),
    // The judges link no implementation...
    ("dhp-conform", &["dhp-oracle", "dhp-model", "dhp-markup", "dhp-secrets", "conform-hack"]),
    // ...except dhp-chaos today: dhp-core goes in issue 46's step 2.
    ("dhp-chaos", &["dhp-core", "dhp-oracle", "dhp-model", "dhp-markup", "dhp-secrets", "dhp-testkit", "dhp-workload"]),
    ("dhp-oracle", &[]),
    ("dhp-model", &[]),
    ("dhp-workload", &[]),
    ("dhp-secrets", &[]),
    ("dhp-markup", &[]),
    ("dhp-testkit", &["dhp-core", "workspace-hack"]),
    ("demo", &["dhp-core", "dhp-testkit", "dhp-workload"]),
    ("dhp-benches", &["dhp-core", "dhp-testkit", "dhp-workload"]),
    ("workspace-hack", &["conform-hack"]),
    ("conform-hack", &[]),
];

fn metadata() -> Value {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline", "--locked"])
        .current_dir(dhp_testkit::checkout())
        .output()
        .expect("run cargo metadata");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("cargo metadata JSON")
}

#[test]
fn every_crate_depends_only_on_what_the_architecture_allows() {
    let meta = metadata();
    let packages = meta["packages"].as_array().expect("packages");
    let members: BTreeSet<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let rows: BTreeSet<&str> = allowed.keys().copied().collect();
    assert_eq!(members, rows, "the workspace's crates (left) vs this test's rows (right)");
    let mut bad = Vec::new();
    for p in packages {
        let name = p["name"].as_str().unwrap_or_default();
        for d in p["dependencies"].as_array().into_iter().flatten() {
            let dep = d["name"].as_str().unwrap_or_default();
            let normal = d["kind"].is_null();
            if normal && members.contains(dep) && !allowed[name].contains(&dep) {
                bad.push(format!("{name} -> {dep}"));
            }
        }
    }
    assert!(bad.is_empty(), "dependencies docs/architecture.md does not allow: {bad:?}");
}
