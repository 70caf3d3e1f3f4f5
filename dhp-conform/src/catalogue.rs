//! The catalogue: for every assertion id, why the rule matters, how it is
//! checked, and the mutants of our adapter that prove the check can fail.
//! `--list`, `--explain ID`, `--list --format json|markdown` and
//! `docs/conformance-rules.md` are all printed from here; the rule
//! itself is the assertion's `about`.

use crate::assertions;
use crate::suite::Level;
use serde_json::{json, Value};

/// What the catalogue adds to an assertion.
#[derive(Debug, Clone, Copy)]
pub struct Notes {
    /// The assertion id the notes belong to.
    pub id: &'static str,
    /// Why an implementation that breaks the rule is unusable.
    pub why: &'static str,
    /// What the runner does to check it.
    pub how: &'static str,
    /// `dhp-mutant-adapter --mutant NAME`s this assertion catches (each fails it
    /// and nothing else; `tests/it/mutants.rs`). Empty only for cross
    /// assertions, whose single-implementation halves are mutant-tested.
    pub mutants: &'static [&'static str],
}

const fn n(id: &'static str, why: &'static str, how: &'static str, mutants: &'static [&'static str]) -> Notes {
    Notes { id, why, how, mutants }
}

/// Notes for every assertion id, in catalogue order.
pub const NOTES: &[Notes] = &[
    n("no-lost-results", "a crash must never lose a result already paid for: the point of durable handoffs",
      "a worker process checkpoints and is SIGKILLed; its lease is expired, a supervisor orphans the handoff, a standby process recovers, finds the last checkpoint and completes",
      &["volatile-checkpoints"]),
    n("no-crossed-inputs", "a worker must never run on inputs other than the ones the parent bound to the handoff id",
      "dispatch of an envelope whose inputs do not match input_hash, and of one whose content does not match its handoff_id, must both be refused with TamperError/ValidationError and store nothing",
      &["no-id-check", "no-input-hash-check", "ids-float-as-int"]),
    n("no-untyped-results", "a parent must be able to trust the shape of a delivered result",
      "complete with a result violating the output schema is refused, and the handoff is failed, not completed",
      &["no-schema-validation"]),
    n("no-silent-budget-overrun", "budgets are the only brake on a runaway agent; an overrun that is not raised is spent money",
      "note_step and note_spend past the contract's budget raise BudgetExceeded, and the usage is recorded in status",
      &["no-budget-check"]),
    n("no-runner-lock-in", "work must be movable between runners and roots without losing state",
      "suspend writes a bundle in one process; another process resumes it on another root, sees the checkpoints, and completes",
      &["bundle-drops-checkpoints", "ids-float-as-int"]),
    n("exactly-one-wins", "two recoverers of one orphan would run the work twice",
      "N processes call recover on one orphaned handoff at one barrier instant; exactly one gets a fence, the others an ownership or state error",
      &["non-atomic-recover"]),
    n("fencing", "a paused worker that wakes up after losing its lease must not overwrite its successor",
      "after orphan + recover, the old token, still held by a live process, and a restarted worker's older incarnation are refused for every write",
      &["no-fence-check"]),
    n("leader-election", "two supervisors acting at once would orphan and dead-letter the same work twice",
      "two supervisor processes: exactly one leads and only its scans act; when its term lapses the other takes over",
      &["two-leaders"]),
    n("transport", "logs are how work crosses hosts; they must reconstruct state byte-exactly",
      "ship an envelope and checkpoints to a log, check the wire format, ingest on another root, compare states; ingesting again adds nothing",
      &["ship-compact-json", "ids-float-as-int"]),
    n("dead-letter-queue", "work that keeps failing must be parked for a human, not retried forever or dropped",
      "with max_attempts exhausted, the supervisor's scan dead-letters the handoff: failed, with an error and its checkpoints",
      &["no-dlq"]),
    n("lease-expiry-lease-lost", "a worker whose lease ran out no longer owns the work, even if nobody took it yet",
      "a heartbeat's seconds left are the stored lease's (within 0.5 s, 6 s leases); then the lease is expired through the time control; checkpoint, heartbeat and complete are refused with LeaseLost and nothing is written",
      &["ignore-lease-expiry"]),
    n("heartbeat-extends-lease", "a long-running worker stays the owner only by heartbeating",
      "with 1 s leases, a heartbeat before expiry pushes lease_expires_at out and reports the seconds left (more than half the TTL, no more than the stored lease has), and a write after the original expiry succeeds (with clock-control the runner moves the implementation's clock to those instants instead of waiting for them; clock-offset-ignored, whose clock stays behind, heartbeats too early to push the lease out). Under standard-store the runner then sets the ownership row's stored terms to 4.0 s × 2: the next heartbeat must move lease_expires_at to now + 8 s and report about 8 s left (a heartbeat uses the stored terms, not the process's 1 s)",
      &["heartbeat-noop", "heartbeat-configured-ttl", "clock-offset-ignored"]),
    n("release-to-pending", "a worker shutting down cleanly must hand work back at once, not after a lease timeout",
      "release makes the handoff pending with no owner and its checkpoints kept; the released token is refused; another worker claims and completes",
      &["release-keeps-lease"]),
    n("idempotent-complete", "a worker retrying a complete after a lost reply must not fail or change the result",
      "complete twice with different results: no error, and the first result stands",
      &["complete-not-idempotent"]),
    n("ack-after-complete", "an ack of unfinished work would tell the parent it can forget it",
      "ack of a pending and of a running handoff is refused with StateError; after complete it is recorded (twice is fine); ack of a handoff failed by a result violating its output schema is refused with StateError and leaves delivery.outbox.ack false",
      &["ack-before-complete", "ack-failed", "no-schema-validation"]),
    n("claim-race", "two workers claiming the same pending handoff would run it twice",
      "N processes claim one pending handoff at one barrier instant; exactly one wins, fence 0. A pending handoff whose ownership row exists (the runner inserts one, as a claim killed between its two writes leaves) is refused with OwnershipLost, and its envelope and row are unchanged",
      &["non-atomic-claim"]),
    n("tampered-bundle-rejected", "a bundle travels through untrusted hands; a changed one must not be imported",
      "bundles with changed inputs or a forged checkpoint hash are refused with TamperError and leave the root empty; the intact bundle resumes",
      &["resume-no-verify", "ids-float-as-int"]),
    n("tampered-log-rejected", "a log line can be forged or corrupted in transit",
      "a log whose envelope does not match its id is refused and creates no handoff",
      &["ingest-no-id-check", "ids-float-as-int"]),
    n("tampered-checkpoint-rejected", "a forged checkpoint would become the state a standby resumes from",
      "a log checkpoint whose state does not match its hash is refused; nothing past it is ingested",
      &["ingest-no-hash-check"]),
    n("truncated-log-line-tolerated", "a log cut by a crash mid-line must still deliver everything before the cut",
      "garbage and a truncated last line are skipped and counted in lines_skipped; the good lines are ingested. A second log holds every other record §8.3 skips: a checkpoint before the header, an unknown type, a list state, seq -1, seq \"1\" and a copy of seq 1 padded to one byte over DHP_TRANSPORT_MAX_LINE_BYTES (each with a state that matches its hash); exactly those six are counted, and seq 0, 1 and a seq 2 padded to exactly the limit are ingested",
      &["ingest-strict", "no-size-limits", "ids-float-as-int"]),
    n("newer-schema-refused", "an old binary writing a newer store would corrupt it",
      "the runner makes the store read as v2 (schema_version holds only 2): open must bring it to 3 and keep the handoff; then it sets schema_version 4: open is refused and the store is left unchanged",
      &["ignore-schema-version"]),
    n("oversize-rejected", "unbounded payloads exhaust disks and memory of every process that reads the store",
      "with DHP_MAX_* limits set, an oversized checkpoint, result and envelope are refused with OversizePayload and nothing is stored, and a checkpoint and a result of exactly the limit are stored; suspend of a handoff whose bundle would exceed the envelope limit is refused with OversizePayload and writes no bundle; a bundle file of exactly 262144 bytes resumes, one of 262145 is refused and imports nothing. With effects, an effect result of exactly DHP_MAX_CHECKPOINT_BYTES is recorded and one byte more is refused. With a 4096-byte line limit (the short-lines profile) a 4095-byte checkpoint line ships and a 4096-byte one is refused, leaving the log as it was, and a header already in the log is left alone once the envelope has outgrown the limit",
      &["no-size-limits", "ids-float-as-int"]),
    n("malformed-ids-rejected", "ids end up in SQL, file names and logs; normalizing them silently aliases handoffs",
      "handoff, worker and supervisor ids of the wrong shape are refused with ValidationError by every operation that takes them; ids at the edges of the rule (128 characters, `__w`, `w__`) claim and checkpoint",
      &["lenient-ids"]),
    n("stall-orphan-then-dlq", "a livelocked agent repeating one action burns budget while heartbeating happily",
      "a worker that checkpointed just now (within stall_timeout_s) and repeated one activity 5 times (limit 10) is left alone by the scan; a different digest counts 1 again; identical activity digests past the stall limit make the scan orphan the handoff as stalled; after max_stall_retries it is dead-lettered",
      &["no-stall-detection"]),
    n("supervisor-budget-kill", "a worker that never calls note_step must still be stopped by its budget",
      "usage over budget is found by the supervisor's scan, a leader's second pass included: the handoff is failed closed and the worker's token is fenced out",
      &["no-budget-kill"]),
    n("effects-first-write-wins", "a side effect (payment, e-mail) must not fire twice across recoveries",
      "record_effect twice for one step keeps the first result; after recovery effect_done reports it",
      &["effects-last-write-wins"]),
    n("capabilities-fail-closed", "ambient credentials must never reach a worker whose contract did not declare them",
      "require_capability is granted only for declared (domain, resource) pairs and the dhp domain, denied with CapabilityDenied otherwise, and every check is audited",
      &["capabilities-fail-open"]),
    n("canonical-vectors", "ids and hashes are only portable if every implementation canonicalizes JSON identically",
      "canonical bytes, state hashes and handoff ids of vectors generated from the reference are compared byte for byte",
      &["canonical-serde", "ids-float-as-int", "ids-big-int-rounded", "ids-escaped-non-ascii"]),
    n("fast-death-detection", "waiting out a lease after a SIGKILL delays recovery for no reason",
      "a worker publishing a liveness token is SIGKILLed; a supervisor on the same host orphans its handoff well before the lease ends; a handoff claimed afterwards under the dead worker's id, by a process with no token, keeps its live lease",
      &["no-liveness"]),
    n("approval-gates", "an agent must not move money or destroy data on its own say-so; an approval that can be re-decided or outlive its timeout is no gate",
      "read and write pass; financial and destructive fail with ApprovalRequired and leave one pending approval, whose stored term is its timeout_s (300 s) and which a leader's scan leaves pending; approve lets await return, deny and expiry (awaited, and found by the leader's scan) make it ApprovalDenied; a decided or expired approval cannot be decided again; a forged token creates nothing. With clock-control the runner moves the implementation's clock past the timeouts (all but the last 0.1 s of the awaited one) instead of waiting",
      &["approvals-fail-open", "approval-redecide", "expired-approval-approves", "no-fence-check", "clock-offset-ignored"]),
    n("approval-class-validated", "a misspelt or new action class waved through as ungated is a fail-open gate",
      "request_approval with unknown classes (\"teleport\", \"Financial\", empty) must be refused with ValidationError and store no approval",
      &["approval-unknown-class-passes"]),
    n("wrong-state-operations", "an operation allowed in the wrong state is a second owner, a lost result or a premature ack",
      "recover of a pending (StateError only), running and completed handoff; claim of a running and completed one; release, complete and checkpoint with another worker's id; ack of a running handoff; claim, recover and status of an unknown id: each refused with the reference's error kind, and status unchanged",
      &["recover-pending", "no-fence-check", "ack-before-complete"]),
    n("invalid-arguments", "a negative spend refunds budget; a non-object state cannot be resumed from",
      "note_spend of -5 (refused, spend_usd unchanged) and checkpoints of an array, a string, a number and null are refused with ValidationError; status and the last checkpoint are unchanged",
      &["lenient-arguments", "negative-spend-accepted"]),
    n("negative-steps-refused", "a worker that can report negative steps can escape its step budget",
      "after 2 steps, note_step(0) is accepted and note_step(-1) is refused with ValidationError; steps stay 2",
      &["negative-steps-ignored"]),
    n("budget-kinds", "a budget the worker can outrun on spend or time is only a step counter",
      "over max_spend_usd and past max_wallclock_s (0.5 s) the worker gets BudgetExceeded and the leader's scan budget-kills each, naming the budget; a handoff spending exactly its limit is left running; a handoff with a 2 s wall clock that nothing writes to after its claim is left alone by two passes and budget-killed by the leader's pass 2.6 s after the claim (with clock-control the runner moves the implementation's clock on by those seconds instead of waiting)",
      &["wallclock-unchecked", "no-budget-kill", "no-budget-check", "clock-offset-ignored"]),
    n("status-reporting", "operators and parents decide from status; a status that lags or lies hides lost and stolen work",
      "status is compared field by field when pending, running (after checkpoint, steps, spend), orphaned (lease-expired, fence 1), recovered (attempt 1, owner w2, fence 2), completed (result, no owner) and acked",
      &["status-fence-from-envelope"]),
    n("suspend-resume-round-trip", "moving work between roots must neither lose history nor let the old copy write on",
      "three checkpoints, steps and spend are suspended and resumed twice (a checkpoint added between hops; the second bundle on another file system than the working directory, where the host has one): status, checkpoint seqs and hashes, attempt (1, then 2) and usage arrive intact; the suspended original refuses checkpoint and complete with StateError, and refuses the bundle back",
      &["bundle-keeps-last-checkpoint", "resume-resets-usage", "bundle-drops-checkpoints", "ids-float-as-int"]),
    n("write-lock-wait", "stores are shared by workers, supervisors and tools: a write that fails when another connection holds the lock for a moment turns ordinary contention into lost checkpoints, failed claims and undelivered results",
      "the runner itself holds the store's write lock for 0.5 s on its own connection (SQLite: BEGIN IMMEDIATE on dhp.sqlite3; PostgreSQL: the handoff's handoffs row FOR UPDATE) while another process opens the existing store (SQLite, during the claim's hold; it must succeed) and while the implementation claims, checkpoints (SQLite only: on PostgreSQL a checkpoint need not touch that row) and completes; each write must wait, succeed and answer only after the lock was let go (a checkpoint answered while the store was locked was not written: volatile-checkpoints fails here too), and the store must hold the checkpoint and the result",
      &["write-lock-gives-up", "volatile-checkpoints"]),
    n("concurrent-create", "workers on a fresh host start together: if the processes that lose the race to create the store fail, or make a second store, work is refused or split between stores nobody reads together",
      "four new adapter processes are released at one instant to open one empty root; each must succeed, each then dispatches a handoff that every other sees as pending, and the standard store holds exactly those four handoffs",
      &["create-loser-fails"]),
    n("leader-renews-term", "a leader that cannot keep its term loses it while it works: leadership flaps, or a second supervisor takes over a live leader and both act",
      "s1 takes leadership; the runner moves the stored term's end to 0.5 s from now; s1 asks again and must stay leader with the term's end pushed out by more than 0.5 s, and no more than a leader TTL (6 s) from now; s2 must then be refused",
      &["leader-never-renews", "two-leaders"]),
    n("stall-by-age", "a worker that heartbeats but never checkpoints holds its lease for ever: without a stall clock its work never moves to a standby",
      "three handoffs are claimed and checkpointed; the runner dates one's last checkpoint 200 s back (stall_timeout_s is 120 s by default); one scan must orphan exactly that one (orphan_reason stalled where reported) and leave the others running. Then it dates the third's 118 s back and the worker heartbeats: the next scan leaves it, and a scan 3 s later (with clock-control: after the runner moved the implementation's clock on by 3 s), with nothing written in between, must orphan it. A fourth, claimed before the first scan (its claim's stamps then dated 60 s back), checkpoints for the first time after it, dated 200 s back: the next scan must orphan it",
      &["stall-by-repeats-only", "no-stall-detection", "volatile-checkpoints", "clock-offset-ignored"]),
    n("timestamps-iso8601", "every implementation reads these fields back (bundles, logs, status, cross-implementation stores): a time in another format cannot be compared or parsed by the others, and is in the envelope a handoff id is computed over",
      "a handoff is built, dispatched, claimed, checkpointed and completed; the loaded envelope's provenance.created_at, execution.completed_at and execution.checkpoints[0].at, and the store's checkpoint rows' at, must each read YYYY-MM-DDTHH:MM:SS[.ffffff]+00:00 (no zero fraction, a real date) and lie within the assertion's run (± 5 s), and at least one of them carries microseconds",
      &["timestamps-unix-seconds"]),
    n("ship-failure-reported", "a worker that is told its handoff shipped stops caring about that copy: if the log was never written, the other host never sees the work and a failover has nothing to resume from",
      "ship_envelope and ship_checkpoint to a log whose file name is over 255 bytes (its directory exists; every file system refuses the name, whoever runs the suite) must each be refused with any error kind but BadRequest; the same calls to a writable log succeed and write a header and a checkpoint line; a checkpoint shipped to a log that does not exist yet creates it with that one line, and one shipped to an empty log writes that one line; nothing else appears in the directory",
      &["ship-hides-write-errors"]),
    n("store-layout", "the reference and dhp-rs open each other's stores: a store in another journal mode blocks readers during writes and loses the WAL's crash guarantees, an envelope_json in another rendering is not the text the other implementation writes back, and a checkpoint without its state_uri is one a reader of the materialized envelope cannot find",
      "after open of a new root the SQLite file header must record WAL (bytes 18 and 19 = 2); the envelope build_envelope answers and the one stored carry the handoff_id and input_hash the oracle recomputes (inputs hold 1.0, an integer above 2^53 and non-ASCII text: checked without the canonical feature); after dispatch of an envelope carrying an extra top-level member (x_extension, outside the id's spec), handoffs.envelope_json must be exactly json.dumps of that envelope (members in its order, the extra one kept, checkpoints []); after claim and two checkpoints, load_envelope's execution.checkpoints must be [{seq, state_hash, at, state_uri: \"sqlite:checkpoints/<hid>/<seq>\"}] as the checkpoint rows say, the stored envelope's checkpoints must still be [], its text still plain and its members still in the dispatched order (x_extension included), and the file still in WAL",
      &["journal-delete", "envelope-sorted-text", "checkpoints-no-state-uri", "ids-float-as-int", "ids-big-int-rounded", "ids-escaped-non-ascii"]),
    n("idempotent-dispatch", "a parent that retries a dispatch after a lost reply must get its handoff back, not an error, and must not reset work already running",
      "the same envelope is dispatched twice (both return the hid), claimed and checkpointed, then dispatched a third time: it returns the hid, and status and the stored envelope_json are unchanged; the store holds one handoff",
      &["dispatch-not-idempotent"]),
    n("output-schema-reading", "a result one implementation delivers and another fails is a handoff whose fate depends on who ran it: the schema language must be read one way",
      "eight handoffs, each completed once: {\"x\": 1.0} and {\"x\": 10^20} complete under type integer, 1.5 is refused; without $schema dependentRequired and prefixItems (2020-12) apply; under $schema draft-04 a boolean exclusiveMinimum refuses 0 and accepts 1; format email is not asserted",
      &["integral-float-not-integer", "schema-dialect-ignored", "no-schema-validation"]),
    n("trailing-newline-ids-refused", "an id that is accepted with a newline after it is a second spelling of the same id: it reaches log lines, file names and SQL as two ids, and a pattern check anchored with $ (Python's re.match) lets it through",
      "claim, status and ack of the dispatched hid followed by \"\\n\", a claim by worker \"w1\\n\" and a scan by supervisor \"s1\\n\" must each be refused with ValidationError; the handoff stays pending with no owner",
      &["ids-match-before-newline", "lenient-ids", "ack-before-complete"]),
    n("reserved-worker-ids-refused", "a worker named __orphaned__ holds a lease that looks like the orphan tombstone: any other worker can recover the handoff while the first is alive; ids made only of dots read as paths and name liveness-token files",
      "claims by worker ids __orphaned__, __w__, ___, ., .. and ... and scans by supervisor ids __orphaned__ and .. must be refused with ValidationError and leave the handoff pending with no owner; workers __w, w__, .w, w.. and _ claim and checkpoint",
      &["reserved-ids-accepted"]),
    n("cross-store", "implementations sharing one store must respect each other's leases and fences",
      "A's worker checkpoints into a shared standard store; B's supervisor orphans it, B's worker recovers and completes; A sees the result and is fenced out",
      &[]),
    n("cross-log", "a log written by one implementation must be ingestible by any other",
      "A ships a handoff with checkpoints; B ingests the log and completes from the last checkpoint",
      &[]),
    n("cross-bundle", "a bundle written by one implementation must be resumable by any other",
      "A suspends a handoff into a bundle; B resumes it on its own root and completes",
      &[]),
];

/// One catalogue row.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The assertion id (`fencing`, `cross-transport`, …).
    pub id: &'static str,
    /// The level it runs at.
    pub level: Level,
    /// Optional adapter features it needs (it is skipped without them).
    pub needs: &'static [&'static str],
    /// The rule, one sentence (the assertion's `about`).
    pub rule: &'static str,
    /// Why and how, and its mutants; `None` only if the catalogue lacks
    /// the id (a unit test keeps that from happening).
    pub notes: Option<&'static Notes>,
}

impl Entry {
    /// Why the rule matters (empty without notes).
    pub fn why(&self) -> &'static str {
        self.notes.map_or("", |n| n.why)
    }
    /// How the runner checks it (empty without notes).
    pub fn how(&self) -> &'static str {
        self.notes.map_or("", |n| n.how)
    }
    /// The mutants that fail it.
    pub fn mutants(&self) -> &'static [&'static str] {
        self.notes.map_or(&[], |n| n.mutants)
    }

    /// The row as `--list --format json` prints it.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id, "level": self.level.as_str(), "needs": self.needs,
            "rule": self.rule, "why": self.why(), "how": self.how(), "mutants": self.mutants(),
        })
    }

    /// `--explain ID`.
    pub fn explain(&self) -> String {
        let needs = if self.needs.is_empty() { "nothing optional".to_string() } else { self.needs.join(", ") };
        let mutants = if self.mutants().is_empty() {
            "none of its own (its halves are the single-implementation assertions)".to_string()
        } else {
            self.mutants().join(", ")
        };
        format!(
            "{id} ({level})\n\nRule:    {rule}\nWhy:     {why}\nChecked: {how}\nNeeds:   {needs}\nCaught mutants (dhp-mutant-adapter --mutant): {mutants}\n",
            id = self.id,
            level = self.level.as_str(),
            rule = self.rule,
            why = self.why(),
            how = self.how(),
        )
    }
}

fn notes(id: &str) -> Option<&'static Notes> {
    NOTES.iter().find(|n| n.id == id)
}

/// Every assertion, single-implementation first, then cross.
pub fn entries() -> Vec<Entry> {
    let mut out: Vec<Entry> = assertions::all()
        .into_iter()
        .map(|a| Entry { id: a.name, level: a.level, needs: a.needs, rule: a.about, notes: notes(a.name) })
        .collect();
    out.extend(assertions::cross::all().into_iter().map(|x| Entry {
        id: x.name,
        level: Level::Cross,
        needs: x.needs,
        rule: x.about,
        notes: notes(x.name),
    }));
    out
}

/// The entry for `id`, if there is one.
pub fn find(id: &str) -> Option<Entry> {
    entries().into_iter().find(|e| e.id == id)
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
        "| id | level | rule | why | how it is checked | mutant that fails it |\n|---|---|---|---|---|---|\n",
    );
    for e in entries {
        let m = if e.mutants().is_empty() {
            "— (cross level: built from the mutant-tested single-implementation operations)".to_string()
        } else {
            e.mutants().iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ")
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            e.id,
            e.level.as_str(),
            md(e.rule),
            md(e.why()),
            md(e.how()),
            m
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_assertion_has_notes_and_every_note_an_assertion() {
        let es = entries();
        for e in &es {
            let n = e.notes.unwrap_or_else(|| panic!("no catalogue notes for {}", e.id));
            assert!(!n.why.is_empty() && !n.how.is_empty(), "{}", e.id);
            assert!(e.level == Level::Cross || !n.mutants.is_empty(), "{} has no mutant", e.id);
        }
        for n in NOTES {
            assert!(es.iter().any(|e| e.id == n.id), "notes for unknown id {}", n.id);
        }
    }
}
