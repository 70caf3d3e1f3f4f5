//! Phase `binaries`: locate `dhp` and the page worker.

use super::*;

pub(super) fn binaries(cx: &mut Ctx) -> anyhow::Result<()> {
    let mut notes = Vec::new();
    cx.dhp =
        procs::locate_dhp(cx.args.dhp.as_deref(), &mut |m| notes.push(m.to_string())).map_err(|e| usage!("{e:#}"))?;
    for n in notes {
        cx.ui.say(&n);
    }
    cx.worker_bin = procs::page_worker_bin().map_err(|e| usage!("{e:#}"))?;
    Ok(())
}
