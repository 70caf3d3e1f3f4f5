//! `dhp-chaos audit install|export STORE_DIR`: the store audit on a SQLite
//! store of one's own (docs/chaos-model.md), to judge it with
//! `dhp-model-judge` without running rounds.

use anyhow::{bail, Context, Result};
use std::io::Write;
use std::path::Path;

/// `install`: add the audit triggers to `STORE_DIR/dhp.sqlite3` (after the
/// dispatch, before any worker). `export`: print the audit as JSON lines,
/// in commit order (the change lines `dhp-model-judge` reads).
pub fn audit(action: &str, store: &Path) -> Result<i32> {
    let db = store.join("dhp.sqlite3");
    if !db.is_file() {
        bail!("{} is no SQLite store (no dhp.sqlite3 in it)", store.display());
    }
    match action {
        "install" => {
            dhp_chaos::audit::install_sqlite(&db)?;
            eprintln!("store audit installed in {}", db.display());
        }
        "export" => {
            let events = dhp_chaos::audit::read_sqlite(&db)?.with_context(|| {
                format!("{} has no store audit (run `dhp-chaos audit install` first)", db.display())
            })?;
            let mut out = std::io::stdout().lock();
            for e in events {
                writeln!(out, "{}", serde_json::to_string(&e)?)?;
            }
        }
        other => bail!("dhp-chaos audit: install or export, not {other:?}"),
    }
    Ok(0)
}
