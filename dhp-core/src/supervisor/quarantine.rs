//! Quarantine: a row the scan cannot handle is reported once, counted and
//! skipped; the scan goes on with the others.

use super::actions::Actions;
use super::{ScanAction, Supervisor};
use crate::error::Result;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

impl Supervisor {
    /// Turn this scan's flagged rows into `quarantined` actions: each row
    /// is reported (and counted) once per reason, not on every scan.
    pub(super) fn report_quarantine(&self, flagged: BTreeMap<String, String>, actions: &mut Actions<'_>) {
        let mut new = Vec::new();
        {
            let mut known = self.quarantine.lock().unwrap_or_else(|p| p.into_inner());
            for (hid, reason) in &flagged {
                if known.get(hid) != Some(reason) {
                    new.push(ScanAction::Quarantined { hid: hid.clone(), reason: reason.clone() });
                }
            }
            *known = flagged;
        }
        for a in new {
            if let ScanAction::Quarantined { hid, reason } = &a {
                tracing::error!(hid = hid.as_str(), reason = reason.as_str(), "quarantined");
            }
            self.metrics.quarantined.fetch_add(1, Ordering::Relaxed);
            actions.report(a);
        }
    }

    /// The rows quarantined by the last scan, with their reasons.
    pub fn quarantined(&self) -> BTreeMap<String, String> {
        self.quarantine.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Record one row's outcome: its action (reported at once: its
/// transaction has committed), or — for a failure that belongs to the row
/// (bad JSON, bad envelope, a row-level SQL error) — a quarantine flag.
/// Store-level failures are returned.
pub(super) fn per_row(
    flagged: &mut BTreeMap<String, String>,
    actions: &mut Actions<'_>,
    hid: &str,
    res: Result<ScanAction>,
) -> Result<()> {
    match res {
        Ok(a) => actions.committed(a),
        Err(e) if e.concerns_one_row() => {
            flagged.insert(hid.to_string(), format!("{}: {e}", e.kind()));
        }
        Err(e) => return Err(e),
    }
    Ok(())
}
