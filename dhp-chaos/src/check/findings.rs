//! What one invariant's check returns, and how findings are filed as
//! violations or as known weaknesses of the reference.

use super::report::Verdict;
use super::Invariant;
use std::collections::HashMap;

/// One thing an invariant found wrong.
#[derive(Debug, Clone)]
pub struct Finding {
    /// What is wrong, for people.
    pub msg: String,
    /// The handoff it concerns, when a documented weakness of the reference
    /// that started that handoff's trouble explains it (the handoff's taint).
    pub hid: Option<String>,
    /// Filed as known with this reason when the handoff is not tainted.
    pub known: Option<&'static str>,
}

/// One invariant's check of a round: what it checked and found.
#[derive(Debug, Default)]
pub struct Findings {
    /// How many items were checked (0: the invariant was not exercised).
    pub checked: u64,
    /// What the check found wrong, in the order found.
    pub found: Vec<Finding>,
    /// Things worth knowing that are not violations.
    pub notes: Vec<String>,
    /// Handoffs whose violations start at a documented weakness of the
    /// reference (hid, why), in the order they were established.
    pub taints: Vec<(String, &'static str)>,
}

impl Findings {
    /// A violation of handoff `hid` (filed as known if the handoff is tainted).
    pub fn of(&mut self, hid: &str, msg: String) {
        self.found.push(Finding { msg, hid: Some(hid.to_string()), known: None });
    }
    /// A violation no weakness of the reference explains.
    pub fn plain(&mut self, msg: String) {
        self.found.push(Finding { msg, hid: None, known: None });
    }
    /// A violation that is a known weakness of the reference in any case.
    pub fn known(&mut self, msg: String, why: &'static str) {
        self.found.push(Finding { msg, hid: None, known: Some(why) });
    }
    /// Something worth knowing that is not a violation.
    pub fn note(&mut self, msg: String) {
        self.notes.push(msg);
    }
    /// The trouble of `hid` starts at a documented weakness of the reference.
    pub fn taint(&mut self, hid: &str, why: &'static str) {
        self.taints.push((hid.to_string(), why));
    }

    /// File the findings: a tainted handoff's, and those with a reason of
    /// their own, as known reference weaknesses; the rest as violations.
    pub fn file(self, inv: Invariant, taint: &HashMap<String, String>) -> Verdict {
        let mut v = Verdict::new(inv.name(), inv.doc());
        v.checked = self.checked;
        v.notes = self.notes;
        for f in self.found {
            let why = f.hid.as_ref().and_then(|h| taint.get(h)).map(String::as_str).or(f.known);
            match why {
                Some(why) => v.known.push(format!("{} [known reference weakness: {why}]", f.msg)),
                None => v.violations.push(f.msg),
            }
        }
        v
    }
}
