//! The Python reference as workers and supervisors: find the venv
//! interpreter and the reference's scripts, and the history shim that
//! makes them record the same history as `dhp work --history`.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The shim (see `adapters/reference/chaos/chaos_shim.py`): runs the reference's script
/// unchanged after wrapping Runner3/Supervisor3 methods to record history.
pub const SHIM: &str = include_str!("../../adapters/reference/chaos/chaos_shim.py");

/// `--python`, else `$DHP_PYTHON`, else `<checkout>/.venv/bin/python`
/// ([`dhp_kit::locate::python`]).
pub fn interpreter(explicit: Option<&Path>) -> Result<PathBuf> {
    Ok(dhp_kit::locate::python(explicit)?)
}

/// The directory of the installed reference package (`dhp/`), checked to
/// hold work_driver4.py and supervisor3_watch.py, and its version.
pub fn reference_dir(python: &Path) -> Result<(PathBuf, String)> {
    let out = std::process::Command::new(python)
        .args(["-c", "import dhp, os; print(os.path.dirname(os.path.abspath(dhp.__file__))); print(dhp.__version__)"])
        .output()
        .map_err(|source| Error::Spawn { program: python.to_path_buf(), source })?;
    if !out.status.success() {
        return Err(Error::Environment {
            problem: format!(
                "{} cannot import the reference package dhp: {} (run `bash scripts/setup.sh`)",
                python.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let dir = PathBuf::from(lines.next().unwrap_or_default().trim());
    let version = lines.next().unwrap_or_default().trim().to_string();
    for f in ["work_driver4.py", "supervisor3_watch.py", "runner3.py", "supervisor3.py"] {
        if !dir.join(f).exists() {
            return Err(Error::Environment { problem: format!("reference package at {} has no {f}", dir.display()) });
        }
    }
    Ok((dir, version))
}
