//! The production library carries no harness machinery and no program
//! (issue 12, item 4; issue 46, item 1): `cargo build -p dhp-core` builds
//! without the `failpoints` feature, so no environment variable can make an
//! installed `dhp` kill itself; and dhp-core's default build pulls none of
//! the program's dependencies (MCP, HTTP, OTLP, the command line) and at
//! most 160 crates. Asked of cargo's own resolver (`cargo tree`, offline).

use std::process::Command;

fn cargo_tree(package: &str, args: &[&str]) -> String {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(["tree", "--offline", "--locked", "--prefix", "none", "-p", package])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo tree");
    assert!(out.status.success(), "cargo tree {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

/// The features `package`'s build turns on for dhp-core.
fn core_features(package: &str, edges: &str) -> Vec<String> {
    let tree = cargo_tree(package, &["-e", edges, "-f", "{p} {f}", "-i", "dhp-core", "--depth", "0"]);
    tree.split_whitespace().last().unwrap_or_default().split(',').map(str::to_string).collect()
}

#[test]
fn a_plain_build_has_no_failpoints() {
    // `cargo build -p dhp-core` and `cargo build -p dhp` (an installed `dhp`).
    for package in ["dhp-core", "dhp"] {
        let f = core_features(package, "normal,build");
        assert!(!f.iter().any(|f| f == "failpoints"), "failpoints in a production build of {package}: {f:?}");
    }
    // The tests of these packages do get them (that is how they kill `dhp`).
    for package in ["dhp-core", "dhp"] {
        let f = core_features(package, "normal,build,dev");
        assert!(f.iter().any(|f| f == "failpoints"), "{package} tests without failpoints: {f:?}");
    }
}

#[test]
fn the_library_pulls_no_program_dependencies() {
    let tree = cargo_tree("dhp-core", &["-e", "normal", "-f", "{p}"]);
    let mut names: Vec<&str> = tree.lines().filter_map(|l| l.split_whitespace().next()).collect();
    for dep in [
        "clap",
        "tracing-subscriber",
        "signal-hook",
        "rmcp",
        "axum",
        "hyper",
        "uuid",
        "anyhow",
        "ureq",
        "opentelemetry-proto",
        "prost",
        "dhp-workload",
        "workspace-hack",
    ] {
        assert!(!names.contains(&dep), "{dep} is a dependency of the library:\n{tree}");
    }
    // What the library does need is still there.
    for dep in ["rusqlite", "postgres", "serde_json", "tokio", "tracing"] {
        assert!(names.contains(&dep), "{dep} missing:\n{tree}");
    }
    names.sort_unstable();
    names.dedup();
    // Issue 46: from 252 with the program inside; 150 when it moved out
    // (workspace-hack, which would add the harnesses' crates, is not a
    // dependency of the library).
    assert!(names.len() <= 160, "dhp-core pulls {} crates (at most 160)", names.len());
}

/// No workload, program or test machinery in the protocol library's
/// source: the census, its worker loop and the history writer live in
/// dhp-workload and the `dhp` program; the servers, exporters and the
/// command line in `dhp`; the locator, the time-travel helpers and the
/// fuzz bodies in dhp-testkit.
#[test]
fn the_library_has_no_program_or_harness_modules() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("read lib.rs");
    for module in ["census", "worker", "history", "trace", "locate", "testing", "fuzzing"] {
        assert!(!src.join(format!("{module}.rs")).exists(), "dhp-core/src/{module}.rs is back");
        assert!(!src.join(module).is_dir(), "dhp-core/src/{module}/ is back");
        assert!(!lib.contains(&format!("mod {module};")), "lib.rs declares mod {module}");
    }
    assert!(!src.join("bin").exists(), "dhp-core/src/bin is back: the program is the dhp crate");
}

/// The library reads no argv and no environment outside `Config::from_env`
/// (config.rs) and the fault injection of the `failpoints` feature
/// (failpoint.rs): the program passes everything else in.
#[test]
fn the_library_reads_no_argv_or_environment_of_its_own() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut dirs = vec![src.clone()];
    let mut bad = Vec::new();
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("read src") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            let rel = p.strip_prefix(&src).expect("under src").to_string_lossy().into_owned();
            if rel == "config.rs" || rel == "failpoint.rs" {
                continue;
            }
            let text = std::fs::read_to_string(&p).expect("read");
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                if ["env::args", "env::var"].iter().any(|w| code.contains(w)) {
                    bad.push(format!("{rel}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(bad.is_empty(), "argv or environment read outside Config:\n{}", bad.join("\n"));
}
