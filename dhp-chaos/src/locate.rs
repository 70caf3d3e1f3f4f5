//! Finding the `dhp` binary: `--dhp PATH`, else next to the current
//! executable (`target/<profile>/dhp`, also from `target/<profile>/deps/`).
//! Under cargo (`cargo run`, `cargo test`; `$CARGO` is set) it is first
//! (re)built with `cargo build -p dhp-core --bin dhp` in the same profile,
//! so a run never uses a stale binary.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

fn profile_dir(exe: &Path) -> Option<PathBuf> {
    let dir = exe.parent()?;
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.parent().map(Path::to_path_buf)
    } else {
        Some(dir.to_path_buf())
    }
}

/// Build `dhp` with cargo into the profile directory `dir` (debug or release).
pub fn cargo_build_dhp(profile_dir: &Path) -> Result<()> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = std::process::Command::new(cargo);
    cmd.args(["build", "--quiet", "-p", "dhp-core", "--bin", "dhp"]);
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
    cmd.current_dir(crate::python::repo_root());
    let st = cmd.status().context("running cargo build -p dhp-core --bin dhp")?;
    if !st.success() {
        bail!("cargo build -p dhp-core --bin dhp failed ({st})");
    }
    Ok(())
}

pub fn dhp_binary(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        if !p.exists() {
            bail!("--dhp {}: no such file", p.display());
        }
        return Ok(p.canonicalize()?);
    }
    let exe = std::env::current_exe().context("locating the current executable")?;
    let dir = profile_dir(&exe).context("executable has no directory")?;
    let candidate = dir.join("dhp");
    if std::env::var_os("CARGO").is_some() {
        cargo_build_dhp(&dir)?;
    }
    if candidate.exists() {
        return Ok(candidate);
    }
    bail!(
        "no dhp binary at {}: build it with `cargo build -p dhp-core --bin dhp` (same profile) or pass --dhp PATH",
        candidate.display()
    )
}
