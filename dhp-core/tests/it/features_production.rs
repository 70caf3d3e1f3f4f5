//! The production library carries no harness machinery (issue 12, item 4):
//! `cargo build -p dhp-core` (and `cargo install`) builds without the
//! `failpoints` feature, so no environment variable can make an installed
//! `dhp` kill itself; and dhp-core as a library with
//! `default-features = false` pulls none of the command line's
//! dependencies. Asked of cargo's own resolver (`cargo tree`, offline).

use std::process::Command;

fn cargo_tree(args: &[&str]) -> String {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(["tree", "--offline", "--locked", "--prefix", "none", "-p", "dhp-core"])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo tree");
    assert!(out.status.success(), "cargo tree {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn a_plain_build_has_no_failpoints() {
    // The features `cargo build -p dhp-core` compiles dhp-core with.
    let top = cargo_tree(&["-e", "normal,build", "--depth", "0", "-f", "{p} {f}"]);
    let features: Vec<&str> = top.split_whitespace().last().unwrap_or_default().split(',').collect();
    assert!(features.contains(&"cli") && features.contains(&"default"), "{top}");
    assert!(!features.contains(&"failpoints"), "failpoints in a production build: {top}");
    // The tests of this package do get them (that is how they kill `dhp`).
    let tests = cargo_tree(&["-e", "normal,build,dev", "--depth", "0", "-f", "{p} {f}"]);
    assert!(tests.contains("failpoints"), "{tests}");
}

#[test]
fn the_library_alone_pulls_no_cli_dependencies() {
    let tree = cargo_tree(&["--no-default-features", "-e", "normal", "-f", "{p}"]);
    let names: Vec<&str> = tree.lines().filter_map(|l| l.split_whitespace().next()).collect();
    // dhp-workload (the census task, the chaos history lines) is the
    // harnesses' workload, not the protocol (issue 31, item 5).
    for dep in ["clap", "tracing-subscriber", "signal-hook", "rmcp", "axum", "uuid", "anyhow", "dhp-workload"] {
        assert!(!names.contains(&dep), "{dep} is a dependency of the bare library:\n{tree}");
    }
    // What the library does need is still there.
    for dep in ["rusqlite", "postgres", "serde_json", "tokio", "tracing"] {
        assert!(names.contains(&dep), "{dep} missing:\n{tree}");
    }
}

/// No workload in the protocol library's source either: the census, its
/// worker loop and the history writer live in dhp-workload and the `dhp`
/// binary, so no feature can bring them back into `dhp_core`.
#[test]
fn the_library_has_no_workload_modules() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("read lib.rs");
    for module in ["census", "worker", "history"] {
        assert!(!src.join(format!("{module}.rs")).exists(), "dhp-core/src/{module}.rs is back");
        assert!(!lib.contains(&format!("mod {module};")), "lib.rs declares mod {module}");
    }
}
