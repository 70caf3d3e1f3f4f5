//! Every normative sentence (MUST / MUST NOT / SHOULD) of docs/PROTOCOL.md
//! §1–§13, keyed by its section and the first rule tag after it, names the
//! model operation(s) that encode it — or says why none does. A test
//! parses the document and this table and compares them both ways, and
//! checks that every named operation is a `pub fn` of [`crate::ops`].

/// How the model encodes a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoded {
    /// These functions of [`crate::ops`].
    Ops(&'static [&'static str]),
    /// Not modelled, and why.
    None(&'static str),
}

/// One row: section, first tag after the sentence (`—` for `[—]`), encoding.
pub type Rule = (&'static str, &'static str, Encoded);

use Encoded::{None as Not, Ops};

const BYTES: &str = "JSON text, hashing and ids are below the model's abstraction (a handoff is its hid, a state its hash); dhp-oracle and dhp-conform check them";
const STORE: &str =
    "the storage engine (files, schema, locking) is not modelled: the model's store is one atomic state";
const WIRE: &str = "the transport log and the TCP wire carry checkpoints between stores; the model has one store";

/// The table.
pub const RULES: &[Rule] = &[
    ("§1.1", "store-layout", Not(BYTES)),
    ("§1.1", "—", Not(BYTES)),
    ("§1.2", "malformed-ids-rejected", Not(BYTES)),
    ("§1.2", "no-crossed-inputs", Ops(&["dispatch"])),
    ("§1.2", "reserved-worker-ids-refused", Not(BYTES)),
    ("§1.2", "trailing-newline-ids-refused", Not(BYTES)),
    ("§2", "canonical-vectors", Not(BYTES)),
    ("§2.1", "store-layout", Not(BYTES)),
    ("§2.1", "—", Not(BYTES)),
    ("§3.1", "concurrent-create", Not(STORE)),
    ("§3.1", "newer-schema-refused", Not(STORE)),
    ("§3.1", "store-layout", Not(STORE)),
    ("§3.1", "write-lock-wait", Not(STORE)),
    ("§3.1", "—", Not(STORE)),
    (
        "§3.2",
        "—",
        Not(
            "each model operation is one atomic step: the atomicity this rule asks of a backend is the model's premise",
        ),
    ),
    ("§4", "no-untyped-results", Ops(&["complete", "fail"])),
    (
        "§4",
        "wrong-state-operations",
        Ops(&["claim", "release", "complete", "fail", "ack", "suspend", "recover", "orphan", "budget_kill"]),
    ),
    ("§5.2", "fencing", Ops(&["ownership_check"])),
    ("§5.2", "—", Ops(&["ownership_check", "checkpoint"])),
    ("§6.1", "no-crossed-inputs", Ops(&["dispatch"])),
    ("§6.2", "invalid-arguments", Ops(&["checkpoint"])),
    ("§6.2", "—", Not("a cost, not an outcome")),
    (
        "§6.3",
        "output-schema-reading",
        Not("JSON Schema reading is not modelled: complete and fail take the validator's verdict"),
    ),
    ("§6.4", "no-silent-budget-overrun", Ops(&["note_step", "note_spend", "budget_kill"])),
    ("§6.5", "effects-first-write-wins", Ops(&["record_effect"])),
    ("§6.6", "approval-gates", Ops(&["approval_request", "decide", "approval_expire"])),
    ("§7.1", "—", Not("a configuration rule; the checker's LEADER_TTL (3 ticks) exceeds a scan (1 tick)")),
    ("§8.1", "oversize-rejected", Not(WIRE)),
    ("§8.1", "transport", Not(WIRE)),
    ("§8.2", "ship-failure-reported", Not(WIRE)),
    ("§9", "—", Not(WIRE)),
    ("§10", "tampered-bundle-rejected", Not("bundle hashes are dhp-oracle's; resume takes a verified bundle")),
    ("§11", "wrong-state-operations", Ops(&["claim", "recover", "release", "complete", "ack"])),
    ("§12", "—", Not("configuration values are not modelled")),
];

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    const DOC: &str = include_str!("../../docs/PROTOCOL.md");

    /// (section, first tag after it) of every normative sentence of §1–§13:
    /// blocks are paragraphs, list items and table rows outside code.
    fn normative(doc: &str) -> BTreeSet<(String, String)> {
        let body = doc.split("\n## 14. Conformance index").next().unwrap_or_default();
        let (mut sec, mut code) = (String::from("§"), false);
        let mut blocks: Vec<(String, String)> = Vec::new();
        let mut open = false;
        for line in body.lines() {
            if line.starts_with("```") {
                code = !code;
                open = false;
                continue;
            }
            if code {
                continue;
            }
            if let Some(h) = line.strip_prefix('#') {
                let num = h.trim_start_matches('#').trim().split(' ').next().unwrap_or_default().trim_end_matches('.');
                sec = format!("§{num}");
                open = false;
                continue;
            }
            let item = line.starts_with("- ")
                || line.starts_with('|')
                || line.split_once(". ").is_some_and(|(n, _)| n.parse::<u32>().is_ok());
            match (line.trim().is_empty(), open && !item) {
                (true, _) => open = false,
                (false, true) => blocks.last_mut().expect("an open block").1.push_str(&format!("\n{line}")),
                (false, false) => {
                    blocks.push((sec.clone(), line.to_string()));
                    open = true;
                }
            }
        }
        let mut out = BTreeSet::new();
        for (sec, text) in blocks.iter().filter(|(s, _)| s != "§0" && s != "§") {
            for kw in ["MUST", "SHOULD"] {
                for (at, _) in text.match_indices(kw) {
                    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                    if word(text[..at].chars().next_back()) || word(text[at + kw.len()..].chars().next()) {
                        continue;
                    }
                    let tag = text[at..].find("**[").map_or("?".to_string(), |t| {
                        let r = &text[at + t + 3..];
                        r[..r.find(']').unwrap_or(0)].trim().to_string()
                    });
                    out.insert((sec.clone(), tag));
                }
            }
        }
        out
    }

    #[test]
    fn every_must_names_its_model_operation_or_why_none() {
        let found = normative(DOC);
        assert!(found.len() > 20, "the parser finds the spec's rules: {found:?}");
        let table: BTreeSet<(String, String)> = RULES.iter().map(|(s, t, _)| (s.to_string(), t.to_string())).collect();
        let missing: Vec<_> = found.difference(&table).collect();
        let stale: Vec<_> = table.difference(&found).collect();
        assert!(missing.is_empty(), "normative sentences with no row in dhp_model::rules::RULES: {missing:?}");
        assert!(stale.is_empty(), "RULES rows naming no normative sentence of docs/PROTOCOL.md: {stale:?}");
    }

    #[test]
    fn every_named_operation_exists() {
        let src: String = [
            include_str!("ops/mod.rs"),
            include_str!("ops/approval.rs"),
            include_str!("ops/budget.rs"),
            include_str!("ops/checkpoint.rs"),
            include_str!("ops/claim.rs"),
            include_str!("ops/complete.rs"),
            include_str!("ops/dispatch.rs"),
            include_str!("ops/effects.rs"),
            include_str!("ops/heartbeat.rs"),
            include_str!("ops/leader.rs"),
            include_str!("ops/orphan.rs"),
            include_str!("ops/recover.rs"),
            include_str!("ops/release.rs"),
            include_str!("ops/repair.rs"),
            include_str!("ops/suspend.rs"),
        ]
        .concat();
        for (sec, tag, enc) in RULES {
            match enc {
                Ops(names) => {
                    for n in *names {
                        assert!(
                            src.contains(&format!("pub fn {n}(")),
                            "{sec} [{tag}] names ops::{n}, which does not exist"
                        );
                    }
                }
                Not(why) => assert!(!why.is_empty(), "{sec} [{tag}]: a reason"),
            }
        }
    }
}
