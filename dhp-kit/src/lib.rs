//! # dhp-kit — the harness machinery that links no implementation
//!
//! The build locator ([`locate`]: the checkout, the reference's Python, the
//! `dhp` binary and the other programs under test, built with cargo), a
//! process group that dies with its guard, polling waits and PostgreSQL's
//! test URL. Split from dhp-testkit (issue 46) so that a judge, dhp-chaos,
//! can use them without linking dhp-core: dhp-testkit re-exports all of it
//! beside its store helpers. Everything here fails loudly with the fix
//! instead of skipping: a test never passes because something was missing.
//!
//! ```
//! use std::time::Duration;
//! let (_tmp, root) = dhp_kit::temp_store();
//! assert!(root.is_dir());
//! let mut n = 0;
//! dhp_kit::wait_until(Duration::from_secs(5), "the counter reaches 3", || {
//!     n += 1;
//!     n >= 3
//! });
//! ```

pub mod doc_table;
pub mod faketime;
pub mod http_limits;
pub mod locate;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The dhp-rs checkout.
pub fn checkout() -> PathBuf {
    locate::checkout().unwrap_or_else(|e| panic!("{e}"))
}

/// The Python interpreter with the reference (dhp-protocol 1.3.0):
/// `$DHP_PYTHON`, else `<checkout>/.venv/bin/python`, made by
/// `scripts/setup.sh` when missing. Panics when that fails.
pub fn python() -> PathBuf {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| {
        if let Ok(p) = locate::python(None) {
            return p;
        }
        let setup = checkout().join("scripts/setup.sh");
        let st = Command::new("bash").arg(&setup).status().unwrap_or_else(|e| panic!("running {setup:?}: {e}"));
        assert!(st.success(), "{} failed: the reference venv is needed", setup.display());
        locate::python(None).unwrap_or_else(|e| panic!("{e}"))
    })
    .clone()
}

/// `target/<profile>/dhp`, built with cargo once per test process (a no-op
/// when fresh): cargo builds a dependency's binaries only for its own tests.
/// With `DHP_TEST_PREBUILT=1` nothing is built (see [`workspace_bin`]).
pub fn dhp_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test executable");
        let profile = locate::profile_dir(&exe).expect("target/<profile>");
        // DHP_TEST_PREBUILT: scripts/test.sh built every target just now
        if std::env::var_os("DHP_TEST_PREBUILT").is_none_or(|v| v.is_empty()) {
            locate::cargo_build_dhp(&profile).unwrap_or_else(|e| panic!("building dhp: {e}"));
        }
        let p = profile.join("dhp");
        assert!(p.is_file(), "{} missing after cargo build", p.display());
        p
    })
    .clone()
}

/// `target/<profile>/BIN` of the workspace package `package`, built with
/// cargo once per test process (a no-op when fresh): a test gets
/// `CARGO_BIN_EXE_*` only for its own package's programs, and the programs
/// under judgement (dhp-rs's adapter) live in packages of their own. With
/// `DHP_TEST_PREBUILT=1` (scripts/test.sh, after building every target of
/// the workspace) nothing is built; a missing program still fails loudly.
pub fn workspace_bin(package: &str, bin: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable");
    let profile = locate::profile_dir(&exe).expect("target/<profile>");
    let p = profile.join(bin);
    if std::env::var_os("DHP_TEST_PREBUILT").is_none_or(|v| v.is_empty()) {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "--quiet", "-p", package, "--bin", bin]);
        locate::scrub_package_env(&mut cmd);
        match profile.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => {}
            Some("release") => {
                cmd.arg("--release");
            }
            Some(other) => {
                cmd.args(["--profile", other]);
            }
        }
        let st = cmd.status().unwrap_or_else(|e| panic!("running cargo build -p {package}: {e}"));
        assert!(st.success(), "cargo build -p {package} --bin {bin} failed");
    }
    assert!(p.is_file(), "{} missing: build it with `cargo build -p {package} --bin {bin}`", p.display());
    p
}

/// The PostgreSQL server of the tests: `$DHP_TEST_PG_URL` (scripts/test.sh
/// starts a throwaway cluster; by hand: `bash scripts/pg.sh start`).
pub fn pg_url() -> String {
    match std::env::var("DHP_TEST_PG_URL") {
        Ok(u) if !u.is_empty() => u,
        _ => panic!("DHP_TEST_PG_URL is not set: start a cluster with `bash scripts/pg.sh start` and export its URL"),
    }
}

/// A fresh directory for a store; the directory lives as long as the guard.
pub fn temp_store() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::Builder::new().prefix("dhp-test-").tempdir().expect("a temp dir");
    let root = t.path().join("store");
    std::fs::create_dir_all(&root).expect("creating the store directory");
    (t, root)
}

/// Poll `cond` every few milliseconds until it holds; panics naming `what`
/// when `timeout` passes first.
pub fn wait_until(timeout: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out after {timeout:?} waiting until {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

pub use dhp_procs::{alive, ProcessGroup};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropping_the_guard_kills_the_group_grandchildren_included() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("grandchild.pid");
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(format!("sleep 300 & echo $! > {}; wait", pidfile.display()));
        let g = ProcessGroup::spawn(cmd);
        let child = g.pid();
        wait_until(Duration::from_secs(10), "the grandchild's pid is written", || {
            std::fs::read_to_string(&pidfile).is_ok_and(|s| s.ends_with('\n'))
        });
        let grandchild: u32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
        assert!(alive(child) && alive(grandchild));
        drop(g);
        wait_until(Duration::from_secs(10), "the grandchild is gone", || !alive(grandchild));
        assert!(!alive(child));
    }

    #[test]
    #[should_panic(expected = "timed out after")]
    fn wait_until_names_what_it_waited_for() {
        wait_until(Duration::from_millis(20), "never", || false);
    }
}
