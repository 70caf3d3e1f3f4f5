//! The catalogue: every assertion declared once ([`table::DESCRIPTORS`]),
//! and what is printed from it: `--list`, `--explain ID`,
//! `--list --format json|markdown` (the table of
//! `docs/conformance-rules.md`) and the §14 index of `docs/PROTOCOL.md`.

mod table;

use crate::check::Check;
use crate::suite::{CrossCtx, Ctx, Level};
use serde_json::{json, Value};
pub use table::DESCRIPTORS;

/// How an assertion runs.
#[derive(Debug, Clone, Copy)]
pub enum Run {
    /// Against one implementation.
    One(fn(&Ctx<'_>) -> Check),
    /// Implementation A writes, B continues.
    Cross {
        /// B continues A's own store (created on A's engine), rather than
        /// a log or bundle on a store of its own.
        shares_store: bool,
        /// The check, given both implementations.
        run: fn(&CrossCtx<'_>) -> Check,
    },
}

/// One assertion, declared once.
#[derive(Debug, Clone, Copy)]
pub struct Descriptor {
    /// The assertion id (`fencing`, `cross-log`, …), as reports and filters name it.
    pub id: &'static str,
    /// The level it runs at.
    pub level: Level,
    /// Optional adapter features it needs (it is skipped without them).
    pub needs: &'static [&'static str],
    /// The sections of docs/PROTOCOL.md whose rules it checks (`§5.2`):
    /// its row of §14, and the sections whose rules may be tagged with it.
    pub sections: &'static [&'static str],
    /// The rule, one sentence.
    pub rule: &'static str,
    /// Why an implementation that breaks the rule is unusable.
    pub why: &'static str,
    /// What the runner does to check it.
    pub how: &'static str,
    /// `dhp-mutant-adapter --mutant NAME`s this assertion catches (each
    /// fails it and nothing else: `tests/it/mutants.rs` runs every one
    /// named here). Empty only for cross assertions, whose
    /// single-implementation halves are mutant-tested.
    pub mutants: &'static [&'static str],
    /// The check.
    pub run: Run,
}

/// `--list` rows: the descriptors.
pub type Entry = Descriptor;

impl Descriptor {
    /// The row as `--list --format json` prints it.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id, "level": self.level.as_str(), "needs": self.needs, "sections": self.sections,
            "rule": self.rule, "why": self.why, "how": self.how, "mutants": self.mutants,
        })
    }

    /// `--explain ID`.
    pub fn explain(&self) -> String {
        let needs = if self.needs.is_empty() { "nothing optional".to_string() } else { self.needs.join(", ") };
        let mutants = if self.mutants.is_empty() {
            "none of its own (its halves are the single-implementation assertions)".to_string()
        } else {
            self.mutants.join(", ")
        };
        format!(
            "{id} ({level})\n\nRule:    {rule}\nWhy:     {why}\nChecked: {how}\nSpec:    docs/PROTOCOL.md {sections}\nNeeds:   {needs}\nCaught mutants (dhp-mutant-adapter --mutant): {mutants}\n",
            id = self.id,
            level = self.level.as_str(),
            rule = self.rule,
            why = self.why,
            how = self.how,
            sections = self.sections.join(", "),
        )
    }
}

/// Every assertion, single-implementation first, then cross.
pub fn entries() -> Vec<Entry> {
    DESCRIPTORS.to_vec()
}

/// The entry for `id`, if there is one.
pub fn find(id: &str) -> Option<Entry> {
    DESCRIPTORS.iter().find(|e| e.id == id).copied()
}

/// `--list`: one aligned line per assertion.
pub fn text(entries: &[Entry]) -> String {
    let w = entries.iter().map(|e| e.id.len()).max().unwrap_or(0);
    let mut out = String::new();
    for e in entries {
        out.push_str(&format!("{:<w$}  {:<8}  {}\n", e.id, e.level.as_str(), e.rule));
    }
    out
}

/// `--list --format json`.
pub fn json(entries: &[Entry]) -> Value {
    json!({"type": "dhp-conform-catalogue", "assertions": entries.iter().map(Entry::to_json).collect::<Vec<_>>()})
}

fn md(s: &str) -> String {
    s.replace('|', "\\|")
}

/// `--list --format markdown`: the rule table of `docs/conformance-rules.md`.
pub fn markdown(entries: &[Entry]) -> String {
    let mut out = String::from(
        "| id | level | sections | rule | why | how it is checked | mutant that fails it |\n|---|---|---|---|---|---|---|\n",
    );
    for e in entries {
        let m = if e.mutants.is_empty() {
            "— (cross level: built from the mutant-tested single-implementation operations)".to_string()
        } else {
            e.mutants.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ")
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} | {} |\n",
            e.id,
            e.level.as_str(),
            e.sections.join(", "),
            md(e.rule),
            md(e.why),
            md(e.how),
            m
        ));
    }
    out
}

/// `docs/PROTOCOL.md` §14: the conformance index (id, level, sections).
pub fn protocol_index(entries: &[Entry]) -> String {
    let mut out = String::from("| assertion | level | sections |\n|---|---|---|\n");
    for e in entries {
        out.push_str(&format!("| {} | {} | {} |\n", e.id, e.level.as_str(), e.sections.join(", ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_descriptor_is_whole_and_ids_are_unique() {
        let mut ids = std::collections::BTreeSet::new();
        for d in DESCRIPTORS {
            assert!(ids.insert(d.id), "{} is declared twice", d.id);
            assert!(!d.rule.is_empty() && !d.why.is_empty() && !d.how.is_empty(), "{}", d.id);
            assert!(!d.sections.is_empty() && d.sections.iter().all(|s| s.starts_with('§')), "{}", d.id);
            let cross = matches!(d.run, Run::Cross { .. });
            assert_eq!(cross, d.level == Level::Cross, "{}: its run and level disagree", d.id);
            assert!(cross || !d.mutants.is_empty(), "{} has no mutant", d.id);
        }
        // single-implementation assertions run first, cross last
        let first_cross = DESCRIPTORS.iter().position(|d| d.level == Level::Cross).unwrap();
        assert!(DESCRIPTORS[first_cross..].iter().all(|d| d.level == Level::Cross));
    }
}
