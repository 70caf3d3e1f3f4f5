//! Finding the programs `--impl ours` and `--impl reference` name, without
//! linking either implementation: dhp-rs's adapter is the `dhp-adapter`
//! program (adapters/dhp-rs), the reference is Python's `dhp` package.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Why a named implementation cannot be found.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocateError {
    /// No `dhp-adapter` beside this program or on PATH, and no cargo to build it.
    #[error(
        "no dhp-adapter (dhp-rs's adapter) beside {beside} or on PATH: build it with \
`cargo build -p dhp-adapter` (same profile as dhp-conform), or install it with scripts/install.sh"
    )]
    NoAdapter {
        /// The directory looked in first.
        beside: String,
    },
    /// Building the adapter with cargo failed.
    #[error("building dhp-adapter with cargo failed ({0}); run `cargo build -p dhp-adapter` to see why")]
    Build(String),
    /// No interpreter with the reference.
    #[error(
        "no Python with the reference (dhp-protocol 1.3.0): tried {tried}. Set DHP_PYTHON to an interpreter \
that has it, or run scripts/setup.sh (a checkout's .venv) or scripts/install.sh (a venv beside the installed tools)"
    )]
    NoPython {
        /// Every interpreter tried, in order.
        tried: String,
    },
}

/// `dhp-adapter` beside the running program (a cargo target directory or an
/// install directory), else on PATH. Run by cargo (`cargo run -p dhp-conform`)
/// and missing, it is built first with the same profile.
pub fn dhp_adapter() -> Result<PathBuf, LocateError> {
    let exe = std::env::current_exe().ok();
    let dir = exe.as_deref().and_then(profile_dir);
    if let Some(p) = dir.as_ref().map(|d| d.join("dhp-adapter")).filter(|p| p.is_file()) {
        return Ok(p);
    }
    if let Some(p) = on_path("dhp-adapter") {
        return Ok(p);
    }
    let beside = dir.as_ref().map_or_else(|| "this program".to_string(), |d| d.display().to_string());
    match (std::env::var_os("CARGO"), &dir) {
        (Some(cargo), Some(d)) => {
            eprintln!("dhp-conform: building dhp-rs's adapter (cargo build -p dhp-adapter) for --impl ours");
            let mut cmd = Command::new(cargo);
            cmd.args(["build", "--quiet", "-p", "dhp-adapter", "--bin", "dhp-adapter"]);
            scrub_package_env(&mut cmd);
            match d.file_name().and_then(|n| n.to_str()) {
                Some("debug") | None => {}
                Some("release") => {
                    cmd.arg("--release");
                }
                Some(other) => {
                    cmd.args(["--profile", other]);
                }
            }
            let st = cmd.status().map_err(|e| LocateError::Build(e.to_string()))?;
            let p = d.join("dhp-adapter");
            if st.success() && p.is_file() {
                Ok(p)
            } else {
                Err(LocateError::Build(st.to_string()))
            }
        }
        _ => Err(LocateError::NoAdapter { beside }),
    }
}

/// The profile directory of an executable (`target/debug` for both
/// `target/debug/x` and `target/debug/deps/x-HASH`).
fn profile_dir(exe: &Path) -> Option<PathBuf> {
    let dir = exe.parent()?;
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.parent().map(Path::to_path_buf)
    } else {
        Some(dir.to_path_buf())
    }
}

fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// The interpreter that has the reference, first of: `$DHP_PYTHON`; the
/// `.venv` of a dhp-rs checkout above `$CARGO_MANIFEST_DIR`, this program or
/// the current directory (scripts/setup.sh); the venv scripts/install.sh makes
/// beside the installed tools (`$XDG_DATA_HOME/dhp-rs/venv`, default
/// `~/.local/share/dhp-rs/venv`); `python3` on PATH if it imports `dhp` 1.3.0.
pub fn python() -> Result<PathBuf, LocateError> {
    if let Some(p) = std::env::var_os("DHP_PYTHON").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return if p.exists() {
            Ok(p)
        } else {
            Err(LocateError::NoPython { tried: format!("DHP_PYTHON={}", p.display()) })
        };
    }
    let mut tried = Vec::new();
    let mut starts: Vec<PathBuf> = Vec::new();
    starts.extend(std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from));
    starts.extend(std::env::current_exe().ok());
    starts.extend(std::env::current_dir().ok());
    for s in &starts {
        if let Some(dir) = s.ancestors().find(|d| d.join("Cargo.toml").is_file() && d.join("dhp-conform").is_dir()) {
            let p = dir.join(".venv/bin/python");
            if p.exists() {
                return Ok(p);
            }
            tried.push(p.display().to_string());
            break;
        }
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")));
    if let Some(d) = data {
        let p = d.join("dhp-rs/venv/bin/python");
        if p.exists() {
            return Ok(p);
        }
        tried.push(p.display().to_string());
    }
    if let Some(p) = on_path("python3") {
        let ok = Command::new(&p)
            .args(["-c", "import dhp, sys; sys.exit(dhp.__version__ != '1.3.0')"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Ok(p);
        }
        tried.push(format!("{} (no dhp 1.3.0)", p.display()));
    }
    Err(LocateError::NoPython { tried: tried.join(", ") })
}

/// Remove the variables cargo sets for the package it runs or tests
/// (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`, `OUT_DIR`, …) from a cargo command:
/// inherited from `cargo run -p dhp-conform` or a test, they make every build
/// script that tracks them (ring's) rerun, and ring and everything above it
/// recompile now and again at the next plain `cargo build`. dhp-conform does
/// not link dhp-core, whose `locate::scrub_package_env` does the same.
fn scrub_package_env(cmd: &mut Command) {
    for (k, _) in std::env::vars_os() {
        let Some(k) = k.to_str() else { continue };
        let package_var = matches!(
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
            || k.starts_with("CARGO_BIN_EXE_");
        if package_var {
            cmd.env_remove(k);
        }
    }
}

/// The commit of the dhp-rs checkout this program runs from (above the
/// executable, or the current directory), with `-dirty` if its work tree
/// has changes; `None` outside a git checkout or without `git`.
pub fn conform_commit() -> Option<String> {
    let mut starts: Vec<PathBuf> = Vec::new();
    starts.extend(std::env::current_exe().ok());
    starts.extend(std::env::current_dir().ok());
    let dir = starts
        .iter()
        .find_map(|s| s.ancestors().find(|d| d.join("Cargo.toml").is_file() && d.join("dhp-conform").is_dir()))?
        .to_path_buf();
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(&dir)
            .args(args)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let head = git(&["rev-parse", "HEAD"]).filter(|h| !h.is_empty())?;
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    Some(if dirty { format!("{head}-dirty") } else { head })
}
