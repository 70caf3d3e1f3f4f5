//! Finding things at run time, for the harness binaries (dhp-chaos,
//! dhp-conform, the demo) and the tests: the dhp-rs checkout, the Python
//! reference's interpreter and the `dhp` binary. Nothing is baked in at
//! compile time, so an installed binary does not point into the directory
//! it was built in.
//!
//! ```
//! // A directory that is not a checkout is refused with the way out.
//! let dir = tempfile::tempdir().unwrap();
//! let err = dhp_kit::locate::checkout_from(&[dir.path()]).unwrap_err();
//! assert!(err.to_string().contains("DHP_CHECKOUT"));
//! ```

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Something the harness needs is not where it looked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocateError {
    #[error(
        "cannot find the dhp-rs checkout (a directory with Cargo.toml and dhp-core/) above {searched}: \
         run from inside it or set DHP_CHECKOUT"
    )]
    /// No checkout above the places searched.
    NoCheckout {
        /// The directories searched, in words.
        searched: String,
    },
    /// `DHP_CHECKOUT` names a directory that is not a checkout.
    #[error("DHP_CHECKOUT={0} is not a dhp-rs checkout (no Cargo.toml and dhp-core/Cargo.toml)")]
    BadCheckout(PathBuf),
    /// The reference's interpreter is not there.
    #[error("python interpreter {0} not found: run `bash scripts/setup.sh` (creates <checkout>/.venv with dhp-protocol 1.3.0) or set DHP_PYTHON")]
    NoPython(PathBuf),
    /// The `--dhp` path given does not exist.
    #[error("--dhp {0}: no such file")]
    NoDhp(PathBuf),
    /// An I/O failure (running cargo, finding the executable).
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Building `dhp` with cargo failed.
    #[error(
        "cargo build -p dhp --bin dhp --features dhp-core/failpoints failed ({0}); build it yourself or pass --dhp PATH"
    )]
    BuildFailed(std::process::ExitStatus),
    /// There is no `dhp` where one was expected, and it could not be built.
    #[error(
        "no dhp binary at {0}: build it with `cargo build -p dhp --bin dhp --features dhp-core/failpoints` (same profile) or pass --dhp PATH"
    )]
    Missing(PathBuf),
}

fn is_checkout(dir: &Path) -> bool {
    dir.join("Cargo.toml").is_file() && dir.join("dhp-core").join("Cargo.toml").is_file()
}

/// The dhp-rs checkout: `$DHP_CHECKOUT` if set, else the first directory
/// that is one, walking up from `$CARGO_MANIFEST_DIR` (set at run time by
/// `cargo run` and `cargo test`), the running executable and the current
/// directory.
pub fn checkout() -> Result<PathBuf, LocateError> {
    if let Some(dir) = std::env::var_os("DHP_CHECKOUT").filter(|d| !d.is_empty()).map(PathBuf::from) {
        return if is_checkout(&dir) { Ok(dir) } else { Err(LocateError::BadCheckout(dir)) };
    }
    let mut starts: Vec<PathBuf> = Vec::new();
    starts.extend(std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from));
    starts.extend(std::env::current_exe().ok());
    starts.extend(std::env::current_dir().ok());
    let refs: Vec<&Path> = starts.iter().map(PathBuf::as_path).collect();
    checkout_from(&refs)
}

/// The first checkout found walking up from each of `starts` in turn.
pub fn checkout_from(starts: &[&Path]) -> Result<PathBuf, LocateError> {
    for start in starts {
        if let Some(dir) = start.ancestors().find(|d| is_checkout(d)) {
            return Ok(dir.to_path_buf());
        }
    }
    let searched = starts.iter().map(|s| s.display().to_string()).collect::<Vec<_>>().join(", ");
    Err(LocateError::NoCheckout { searched: if searched.is_empty() { "nothing".into() } else { searched } })
}

/// The interpreter that has the reference (dhp-protocol 1.3.0): `explicit`,
/// else `$DHP_PYTHON`, else `<checkout>/.venv/bin/python` (made by
/// `scripts/setup.sh`), else — outside a checkout — the venv that
/// `scripts/install.sh` makes beside the installed tools
/// (`$XDG_DATA_HOME/dhp-rs/venv`, default `~/.local/share/dhp-rs/venv`).
/// It must exist.
pub fn python(explicit: Option<&Path>) -> Result<PathBuf, LocateError> {
    let p = match explicit {
        Some(p) => p.to_path_buf(),
        None => match std::env::var_os("DHP_PYTHON").filter(|p| !p.is_empty()) {
            Some(p) => PathBuf::from(p),
            None => match checkout() {
                Ok(dir) => dir.join(".venv/bin/python"),
                Err(e) => match installed_venv_python() {
                    Some(p) if p.exists() => p,
                    _ => return Err(e),
                },
            },
        },
    };
    if p.exists() {
        Ok(p)
    } else {
        Err(LocateError::NoPython(p))
    }
}

/// `$XDG_DATA_HOME/dhp-rs/venv/bin/python` (default
/// `~/.local/share/dhp-rs/venv/bin/python`): where scripts/install.sh puts
/// the reference for installed tools.
pub fn installed_venv_python() -> Option<PathBuf> {
    let data = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()).map(PathBuf::from).or_else(|| {
        std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".local/share"))
    })?;
    Some(data.join("dhp-rs/venv/bin/python"))
}

/// `target/<profile>` of an executable (`target/<profile>/x`, or a test's
/// `target/<profile>/deps/x`).
pub fn profile_dir(exe: &Path) -> Option<PathBuf> {
    let dir = exe.parent()?;
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.parent().map(Path::to_path_buf)
    } else {
        Some(dir.to_path_buf())
    }
}

/// Variables cargo sets for the package it builds, runs or tests
/// (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`, `OUT_DIR`, …). A program started by
/// `cargo run` or by a test inherits its package's. A cargo started from
/// there with them set sees other values than a shell's cargo, so every build
/// script that tracks them reruns (ring's tracks `CARGO_MANIFEST_DIR` and
/// `CARGO_PKG_*`): ring and everything above it recompile, and once more at
/// the next plain `cargo build`. Remove them from `cmd` before it runs cargo.
pub fn scrub_package_env(cmd: &mut Command) {
    for (k, _) in std::env::vars_os() {
        let Some(k) = k.to_str() else { continue };
        if is_package_var(k) {
            cmd.env_remove(k);
        }
    }
}

fn is_package_var(k: &str) -> bool {
    matches!(
        k,
        "OUT_DIR"
            | "CARGO_MANIFEST_DIR"
            | "CARGO_MANIFEST_PATH"
            | "CARGO_MANIFEST_LINKS"
            | "CARGO_CRATE_NAME"
            | "CARGO_BIN_NAME"
            | "CARGO_PRIMARY_PACKAGE"
            | "CARGO_TARGET_TMPDIR"
            | "CARGO_RUSTC_CURRENT_DIR"
    ) || k.starts_with("CARGO_PKG_")
        || k.starts_with("CARGO_BIN_EXE_")
}

/// Build `dhp` with cargo into the profile directory `profile_dir`
/// (`target/debug`, `target/release`, `target/<profile>`).
pub fn cargo_build_dhp(profile_dir: &Path) -> Result<(), LocateError> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    // With the `failpoints` feature, as the harness crates and the tests
    // build dhp-core: this build and `cargo test` share one `dhp` (the
    // chaos harness arms its failpoints) and neither rebuilds it for the other.
    cmd.args(["build", "--quiet", "-p", "dhp", "--bin", "dhp", "--features", "dhp-core/failpoints"]);
    scrub_package_env(&mut cmd);
    match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => {}
        Some("release") => {
            cmd.arg("--release");
        }
        Some(other) => {
            cmd.args(["--profile", other]);
        }
    }
    if let Some(target) = profile_dir.parent() {
        cmd.env("CARGO_TARGET_DIR", target);
    }
    cmd.current_dir(checkout()?);
    let st = cmd.stdin(Stdio::null()).status().map_err(|source| LocateError::Io {
        what: "running cargo build -p dhp --bin dhp --features dhp-core/failpoints".into(),
        source,
    })?;
    if st.success() {
        Ok(())
    } else {
        Err(LocateError::BuildFailed(st))
    }
}

/// The `dhp` binary: `explicit` if given (it must exist); else `dhp` in the
/// running executable's `target/<profile>`. Under cargo (`$CARGO` is set:
/// `cargo run`, `cargo test`) it is first built with `cargo build -p
/// dhp --bin dhp --features dhp-core/failpoints` in that profile (a no-op when
/// fresh), so a run never
/// uses a stale binary; elsewhere it is built only when missing. `log`
/// hears what is done.
pub fn dhp(explicit: Option<&Path>, log: &mut dyn FnMut(&str)) -> Result<PathBuf, LocateError> {
    if let Some(p) = explicit {
        return if p.is_file() { Ok(p.to_path_buf()) } else { Err(LocateError::NoDhp(p.to_path_buf())) };
    }
    let exe = std::env::current_exe()
        .map_err(|source| LocateError::Io { what: "locating the running executable".into(), source })?;
    let dir = profile_dir(&exe).ok_or_else(|| LocateError::Missing(exe.clone()))?;
    let bin = dir.join("dhp");
    // Run by cargo (`cargo run`, a test), the build is asked for (a no-op
    // when fresh) unless scripts/test.sh built every target already.
    let prebuilt = std::env::var_os("DHP_TEST_PREBUILT").is_some_and(|v| !v.is_empty());
    let under_cargo = std::env::var_os("CARGO").is_some() && !prebuilt;
    if bin.is_file() && !under_cargo {
        return Ok(bin);
    }
    if !bin.is_file() {
        log(&format!(
            "building dhp (missing): cargo build -p dhp --bin dhp --features dhp-core/failpoints in {} …",
            dir.display()
        ));
    }
    match cargo_build_dhp(&dir) {
        Ok(()) if bin.is_file() => Ok(bin),
        Ok(()) => Err(LocateError::Missing(bin)),
        Err(e) if bin.is_file() => {
            log(&format!("warning: could not rebuild dhp ({e}); using the existing binary"));
            Ok(bin)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkout_is_found_from_below_it() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("Cargo.toml"), "[workspace]\n").unwrap();
        std::fs::create_dir_all(root.path().join("dhp-core/src")).unwrap();
        std::fs::write(root.path().join("dhp-core/Cargo.toml"), "[package]\n").unwrap();
        let deep = root.path().join("dhp-core/src");
        let elsewhere = tempfile::tempdir().unwrap();
        assert_eq!(checkout_from(&[elsewhere.path(), &deep]).unwrap(), root.path());
        assert!(matches!(checkout_from(&[elsewhere.path()]), Err(LocateError::NoCheckout { .. })));
    }

    #[test]
    fn profile_dirs() {
        assert_eq!(profile_dir(Path::new("/t/debug/deps/x-123")).unwrap(), Path::new("/t/debug"));
        assert_eq!(profile_dir(Path::new("/t/release/dhp-chaos")).unwrap(), Path::new("/t/release"));
    }
}

#[cfg(test)]
mod scrub_tests {
    use super::*;

    #[test]
    fn cargo_started_from_a_test_does_not_see_the_tests_package() {
        // cargo sets these for this very test process.
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some() && std::env::var_os("CARGO_PKG_NAME").is_some());
        let mut cmd = Command::new("cargo");
        scrub_package_env(&mut cmd);
        let removed: Vec<String> =
            cmd.get_envs().filter(|(_, v)| v.is_none()).map(|(k, _)| k.to_string_lossy().into_owned()).collect();
        for k in ["CARGO_MANIFEST_DIR", "CARGO_PKG_NAME", "CARGO_PKG_VERSION"] {
            assert!(removed.iter().any(|r| r == k), "{k} still inherited: removed {removed:?}");
        }
        // cargo's own settings stay.
        assert!(!removed.iter().any(|r| r == "CARGO_HOME" || r == "CARGO_TARGET_DIR"), "{removed:?}");
    }
}
