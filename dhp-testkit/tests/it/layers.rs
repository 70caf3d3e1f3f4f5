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
    ("dhp", &["dhp-core", "dhp-workload", "dhp-workload-client", "dhp-http", "workspace-hack"]),
    // dhp-rs under test: the adapter and the chaos mutants.
    ("dhp-adapter", &["dhp-core", "dhp-testkit", "dhp-adapter-proto"]),
    ("dhp-chaos-mutants", &["dhp-core", "dhp-workload", "dhp-workload-client", "dhp-secrets", "workspace-hack"]),
    // The judges link no implementation.
    (
        "dhp-conform",
        &["dhp-oracle", "dhp-model", "dhp-markup", "dhp-secrets", "dhp-procs", "dhp-adapter-proto", "conform-hack"],
    ),
    (
        "dhp-chaos",
        &["dhp-oracle", "dhp-model", "dhp-markup", "dhp-secrets", "dhp-kit", "dhp-procs", "dhp-workload", "dhp-http"],
    ),
    ("dhp-oracle", &[]),
    // What the judges judge by (spec/): the adapter protocol's messages,
    // shared by the runner and the adapters; it links no implementation.
    ("dhp-adapter-proto", &[]),
    ("dhp-model", &[]),
    ("dhp-workload", &[]),
    ("dhp-workload-client", &["dhp-workload"]),
    ("dhp-secrets", &[]),
    ("dhp-markup", &[]),
    // The one HTTP server stack and its shared limits (every server).
    ("dhp-http", &[]),
    ("dhp-testkit", &["dhp-core", "dhp-kit", "workspace-hack"]),
    // The test machinery that links no implementation (the judges use it).
    ("dhp-kit", &["dhp-procs", "workspace-hack"]),
    // Ending what the judged started: process groups and trees, cgroups, markers.
    ("dhp-procs", &[]),
    ("demo", &["dhp-core", "dhp-testkit", "dhp-workload", "dhp-http"]),
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

/// Judges that must not link dhp-core in any build of theirs, their tests
/// included (`cargo tree -p CRATE` shows no dhp-core): a checker that runs
/// the judged's code can share its bugs. (dhp-oracle's and dhp-conform's
/// tests do link it, to pin both to the same vectors and to run dhp-rs's
/// adapter: test-only edges.)
const UNLINKED: &[&str] = &["dhp-chaos"];

/// Every package `root` pulls in, from the resolve of the full `cargo
/// metadata`: `root`'s dependencies of every kind (tests included), then
/// the normal and build dependencies of those (a dependency's own
/// dev-dependencies are not built).
fn pulled(meta: &Value, root: &str) -> BTreeSet<String> {
    let name_of: BTreeMap<&str, &str> = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter_map(|p| Some((p["id"].as_str()?, p["name"].as_str()?)))
        .collect();
    let nodes: BTreeMap<&str, &Value> = meta["resolve"]["nodes"]
        .as_array()
        .expect("resolve")
        .iter()
        .filter_map(|n| Some((n["id"].as_str()?, n)))
        .collect();
    let start = name_of.iter().find(|(_, n)| **n == root).map(|(id, _)| *id).expect("the root package");
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut todo = vec![(start, true)];
    while let Some((id, is_root)) = todo.pop() {
        for d in nodes[id]["deps"].as_array().into_iter().flatten() {
            let dev_only = d["dep_kinds"].as_array().into_iter().flatten().all(|k| k["kind"] == "dev");
            let pkg = d["pkg"].as_str().unwrap_or_default();
            if (is_root || !dev_only) && seen.insert(pkg) {
                todo.push((pkg, false));
            }
        }
    }
    seen.into_iter().filter_map(|id| name_of.get(id).map(|n| n.to_string())).collect()
}

#[test]
fn the_judges_link_no_implementation_not_even_in_their_tests() {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    // Only the host's packages: a fresh machine's registry cache holds
    // nothing for other platforms (android_system_properties, say), and
    // without the filter `--offline` fails for want of their manifests.
    let rustc = Command::new("rustc").arg("-vV").output().expect("run rustc -vV");
    let version = String::from_utf8_lossy(&rustc.stdout);
    let host = version.lines().find_map(|l| l.strip_prefix("host: ")).expect("rustc -vV names the host");
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline", "--locked", "--filter-platform", host])
        .current_dir(dhp_testkit::checkout())
        .output()
        .expect("run cargo metadata");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata JSON");
    for judge in UNLINKED {
        let p = pulled(&meta, judge);
        assert!(p.contains("serde_json"), "{judge}: the walk found its dependencies ({p:?})");
        for implementation in ["dhp-core", "dhp-testkit", "dhp-adapter", "dhp-chaos-mutants", "dhp"] {
            assert!(
                !p.contains(implementation),
                "{judge} links {implementation} (cargo tree -p {judge} -i {implementation})"
            );
        }
    }
}
