//! The judge: every audited store change must be the effect of a legal
//! model operation from the state just before it.

mod types;

pub use types::{Change, Excuse, Fact, Params, Report, RowOp, Table, Variant, Violation};

/// Replays a round's audit (changes + facts, merged in order) through the model.
#[derive(Debug, Clone)]
pub struct Judge {
    variant: Variant,
    params: Params,
    report: Report,
}

impl Judge {
    /// A judge of `variant` with the store's `params`.
    pub fn new(variant: Variant, params: Params) -> Self {
        Judge { variant, params, report: Report::default() }
    }

    /// A process fact, in time order with the changes.
    pub fn fact(&mut self, fact: Fact) {
        let _ = fact;
    }

    /// The next committed change, in commit order.
    pub fn change(&mut self, change: &Change) {
        self.report.consumed += 1;
        self.report.undecidable.push(format!(
            "seq {}: not judged (judge logic not implemented yet; variant {:?}, leader ttl {})",
            change.seq, self.variant, self.params.leader_ttl_s
        ));
    }

    /// The verdict.
    pub fn finish(self) -> Report {
        self.report
    }
}
