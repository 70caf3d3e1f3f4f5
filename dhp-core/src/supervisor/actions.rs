//! A pass's actions, each handed to the caller's callback the moment the
//! transaction that made it committed, not after the whole pass: a
//! supervisor killed in the middle of a pass has reported (in the chaos
//! harness: written the history line of) every action it committed, so
//! the order of an orphan and a woken zombie's writes can be proven.

use super::ScanAction;
use crate::failpoint;

/// What the supervisor calls with each action (it may be called from the
/// liveness poll's thread and the scan's at once).
pub type OnAction<'a> = dyn Fn(&ScanAction) + Sync + 'a;

/// The actions of one pass (or one liveness poll), reported as they come.
pub(super) struct Actions<'a> {
    list: Vec<ScanAction>,
    on_action: Option<&'a OnAction<'a>>,
}

impl<'a> Actions<'a> {
    pub(super) fn new(on_action: Option<&'a OnAction<'a>>) -> Self {
        Actions { list: Vec::new(), on_action }
    }

    /// An action whose transaction has just committed: reported at once
    /// (no-op outcomes are dropped).
    pub(super) fn committed(&mut self, a: ScanAction) {
        if a.kind().is_no_op() {
            return;
        }
        self.report(a);
        // The action is committed and reported; nothing else of this pass
        // has happened yet (tests kill the supervisor here).
        failpoint::hit("supervise.after_commit");
    }

    /// An action that is not a commit (a quarantine report).
    pub(super) fn report(&mut self, a: ScanAction) {
        if let Some(f) = self.on_action {
            f(&a);
        }
        self.list.push(a);
    }

    pub(super) fn into_vec(self) -> Vec<ScanAction> {
        self.list
    }
}
