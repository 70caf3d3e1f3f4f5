//! Deliberately broken variants of the adapter (the `dhp-mutant-adapter`
//! binary), each removing one guarantee. They exist to prove that the
//! conformance assertions can fail: `tests/it/mutants.rs` runs the suite
//! against each and expects exactly the assertion that guards that
//! guarantee to fail.
//!
//! A mutant wraps the real adapter ([`crate::adapter`]), which knows
//! nothing of them: it rewrites a request's arguments, replaces the few
//! operations it changes (one file per family below), or rewrites their
//! answers; every other operation is the real adapter's.

mod approvals;
mod budget;
mod canonical_ids;
mod contention;
mod execution;
mod identity;
mod lease;
mod supervision;
mod times;
mod transport;

use crate::adapter::{self, Adapter, Handler, R};
use dhp_adapter_proto::{Op, Request};
use dhp_core::Config;
use serde_json::{json, Value};

/// A broken guarantee (the names and what each breaks: [`ALL`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mutant {
    NoFenceCheck,
    NonAtomicRecover,
    NoIdCheck,
    NoInputHashCheck,
    NoSchemaValidation,
    NoBudgetCheck,
    VolatileCheckpoints,
    NoDlq,
    TwoLeaders,
    ShipCompactJson,
    BundleDropsCheckpoints,
    IgnoreLeaseExpiry,
    HeartbeatNoop,
    ReleaseKeepsLease,
    CompleteNotIdempotent,
    AckBeforeComplete,
    NonAtomicClaim,
    ResumeNoVerify,
    IngestNoIdCheck,
    IngestNoHashCheck,
    IngestStrict,
    IgnoreSchemaVersion,
    NoSizeLimits,
    LenientIds,
    NoStallDetection,
    NoBudgetKill,
    EffectsLastWriteWins,
    CapabilitiesFailOpen,
    CanonicalSerde,
    NoLiveness,
    ApprovalsFailOpen,
    ApprovalRedecide,
    ExpiredApprovalApproves,
    ApprovalUnknownClassPasses,
    RecoverPending,
    LenientArguments,
    NegativeStepsIgnored,
    BundleKeepsLastCheckpoint,
    ResumeResetsUsage,
    WallclockUnchecked,
    StatusFenceFromEnvelope,
    WriteLockGivesUp,
    CreateLoserFails,
    LeaderNeverRenews,
    StallByRepeatsOnly,
    TimestampsUnixSeconds,
    ShipHidesWriteErrors,
    JournalDelete,
    EnvelopeSortedText,
    CheckpointsNoStateUri,
    HeartbeatConfiguredTtl,
    DispatchNotIdempotent,
    AckFailed,
    IdsMatchBeforeNewline,
    ReservedIdsAccepted,
    NegativeSpendAccepted,
    IntegralFloatNotInteger,
    SchemaDialectIgnored,
    ClockOffsetIgnored,
    RedispatchRequeuesTerminal,
    IdsFloatAsInt,
    IdsBigIntRounded,
    IdsEscapedNonAscii,
}

/// Name, mutant, what it breaks.
pub(crate) const ALL: &[(&str, Mutant, &str)] = &[
    (
        "no-fence-check",
        Mutant::NoFenceCheck,
        "worker writes are made with the current owner's token, whatever token was presented",
    ),
    (
        "non-atomic-recover",
        Mutant::NonAtomicRecover,
        "recover reads the orphaned row, waits, then writes without a compare-and-set",
    ),
    (
        "no-id-check",
        Mutant::NoIdCheck,
        "dispatch checks the input binding but not that the envelope matches its handoff_id",
    ),
    (
        "no-input-hash-check",
        Mutant::NoInputHashCheck,
        "dispatch checks the handoff_id but not that inputs match input_hash",
    ),
    ("no-schema-validation", Mutant::NoSchemaValidation, "complete accepts any result (the output schema is ignored)"),
    ("no-budget-check", Mutant::NoBudgetCheck, "note_step / note_spend never raise BudgetExceeded"),
    (
        "volatile-checkpoints",
        Mutant::VolatileCheckpoints,
        "checkpoints are buffered in memory and written at the next request: a killed worker loses them",
    ),
    ("no-dlq", Mutant::NoDlq, "an expired lease is always orphaned for retry, never dead-lettered"),
    ("two-leaders", Mutant::TwoLeaders, "a supervisor takes leadership whether or not another holds a live term"),
    (
        "ship-compact-json",
        Mutant::ShipCompactJson,
        "checkpoint log lines are written as compact JSON instead of json.dumps(sort_keys=True)",
    ),
    ("bundle-drops-checkpoints", Mutant::BundleDropsCheckpoints, "suspend writes a bundle without its checkpoints"),
    (
        "ignore-lease-expiry",
        Mutant::IgnoreLeaseExpiry,
        "a write refused for an expired lease renews the lease and retries",
    ),
    ("heartbeat-noop", Mutant::HeartbeatNoop, "heartbeat answers without extending the lease"),
    (
        "release-keeps-lease",
        Mutant::ReleaseKeepsLease,
        "release marks the handoff pending but leaves the ownership row",
    ),
    ("complete-not-idempotent", Mutant::CompleteNotIdempotent, "completing a completed handoff is an error"),
    ("ack-before-complete", Mutant::AckBeforeComplete, "ack is recorded whatever the status"),
    ("non-atomic-claim", Mutant::NonAtomicClaim, "claim reads pending, waits, then overwrites the ownership row"),
    (
        "resume-no-verify",
        Mutant::ResumeNoVerify,
        "resume re-identifies the bundle envelope and drops checkpoint hashes instead of verifying",
    ),
    ("ingest-no-id-check", Mutant::IngestNoIdCheck, "ingest re-identifies the log's envelope instead of verifying it"),
    (
        "ingest-no-hash-check",
        Mutant::IngestNoHashCheck,
        "ingest recomputes checkpoint hashes instead of verifying them",
    ),
    ("ingest-strict", Mutant::IngestStrict, "ingest refuses a log with any malformed line"),
    (
        "ignore-schema-version",
        Mutant::IgnoreSchemaVersion,
        "open deletes schema_version rows newer than 3 instead of refusing the store",
    ),
    ("no-size-limits", Mutant::NoSizeLimits, "the DHP_MAX_* limits are ignored"),
    ("lenient-ids", Mutant::LenientIds, "malformed ids are normalized (lowercased, cleaned) instead of refused"),
    ("no-stall-detection", Mutant::NoStallDetection, "the stall limits are ignored (never stalled)"),
    ("no-budget-kill", Mutant::NoBudgetKill, "the supervisor scan skips budget enforcement"),
    ("effects-last-write-wins", Mutant::EffectsLastWriteWins, "record_effect overwrites an existing effect"),
    ("capabilities-fail-open", Mutant::CapabilitiesFailOpen, "a contract without capabilities grants everything"),
    ("canonical-serde", Mutant::CanonicalSerde, "canonical JSON is serde_json's default output"),
    ("no-liveness", Mutant::NoLiveness, "declares fast-death-detection but publishes no liveness token"),
    ("approvals-fail-open", Mutant::ApprovalsFailOpen, "financial and destructive actions pass without an approval"),
    ("approval-redecide", Mutant::ApprovalRedecide, "a decided approval can be decided again (the last decision wins)"),
    (
        "approval-unknown-class-passes",
        Mutant::ApprovalUnknownClassPasses,
        "an unknown action class is treated as `read` (no approval)",
    ),
    ("recover-pending", Mutant::RecoverPending, "recover of a pending (never orphaned) handoff takes it over"),
    (
        "lenient-arguments",
        Mutant::LenientArguments,
        "a negative spend counts as 0 and a checkpoint state that is not an object is wrapped in one",
    ),
    (
        "negative-steps-ignored",
        Mutant::NegativeStepsIgnored,
        "note_step with a negative count is accepted (and ignored)",
    ),
    (
        "bundle-keeps-last-checkpoint",
        Mutant::BundleKeepsLastCheckpoint,
        "suspend writes only the last checkpoint into the bundle",
    ),
    ("resume-resets-usage", Mutant::ResumeResetsUsage, "resume starts steps and spend from zero"),
    (
        "wallclock-unchecked",
        Mutant::WallclockUnchecked,
        "a worker past max_wallclock_s is not told (its BudgetExceeded is swallowed)",
    ),
    (
        "status-fence-from-envelope",
        Mutant::StatusFenceFromEnvelope,
        "status reports the fence recorded in the envelope, not the ownership row's",
    ),
    (
        "expired-approval-approves",
        Mutant::ExpiredApprovalApproves,
        "awaiting an approval that expired undecided returns approved",
    ),
    (
        "write-lock-gives-up",
        Mutant::WriteLockGivesUp,
        "a write that finds the store's write lock held by another connection fails at once (busy timeout 0)",
    ),
    (
        "create-loser-fails",
        Mutant::CreateLoserFails,
        "an opener that loses the race to create a new store reports an error instead of opening the winner's store",
    ),
    (
        "leader-never-renews",
        Mutant::LeaderNeverRenews,
        "a leader whose term is live answers leader without writing a new term, so the term runs out under it",
    ),
    (
        "stall-by-repeats-only",
        Mutant::StallByRepeatsOnly,
        "a handoff counts as stalled only by repeated activity, never by the age of its last checkpoint",
    ),
    (
        "timestamps-unix-seconds",
        Mutant::TimestampsUnixSeconds,
        "build_envelope writes provenance.created_at as Unix seconds instead of isoformat() UTC text",
    ),
    (
        "ship-hides-write-errors",
        Mutant::ShipHidesWriteErrors,
        "ship_envelope answers ok when the log file cannot be created (the I/O error is swallowed)",
    ),
    ("journal-delete", Mutant::JournalDelete, "open leaves the store in journal_mode=DELETE instead of WAL"),
    (
        "envelope-sorted-text",
        Mutant::EnvelopeSortedText,
        "dispatch stores envelope_json in the sorted rendering (json.dumps(sort_keys=True)) instead of the plain one",
    ),
    (
        "checkpoints-no-state-uri",
        Mutant::CheckpointsNoStateUri,
        "load_envelope materializes checkpoints without their state_uri",
    ),
    (
        "heartbeat-configured-ttl",
        Mutant::HeartbeatConfiguredTtl,
        "a heartbeat extends the lease by the process's configured TTL instead of the ownership row's stored terms",
    ),
    (
        "dispatch-not-idempotent",
        Mutant::DispatchNotIdempotent,
        "dispatch of an envelope whose hid is already stored raises StateError instead of returning the hid",
    ),
    ("ack-failed", Mutant::AckFailed, "ack of a failed handoff is accepted and recorded"),
    (
        "ids-match-before-newline",
        Mutant::IdsMatchBeforeNewline,
        "an id followed by one newline is accepted as the id (a regex anchored with $, matched with re.match)",
    ),
    (
        "reserved-ids-accepted",
        Mutant::ReservedIdsAccepted,
        "reserved worker and supervisor ids (__name__, dots only) are accepted (run under an unreserved alias)",
    ),
    (
        "negative-spend-accepted",
        Mutant::NegativeSpendAccepted,
        "note_spend of a negative amount is accepted and recorded (spend goes down)",
    ),
    (
        "integral-float-not-integer",
        Mutant::IntegralFloatNotInteger,
        "complete refuses a result holding a float with a zero fraction (1.0 read as not an integer)",
    ),
    (
        "schema-dialect-ignored",
        Mutant::SchemaDialectIgnored,
        "complete reads every output_schema as 2020-12, ignoring its $schema",
    ),
    (
        "clock-offset-ignored",
        Mutant::ClockOffsetIgnored,
        "declares clock-control but ignores clock_offset_s: its clock stays real time while the runner moves time on",
    ),
    (
        "redispatch-requeues-terminal",
        Mutant::RedispatchRequeuesTerminal,
        "dispatching the envelope of a completed or failed handoff again puts it back to pending (a terminal handoff changes)",
    ),
    (
        "ids-float-as-int",
        Mutant::IdsFloatAsInt,
        "canonical JSON (ids, input_hash, the canonical op) writes a float with a zero fraction as an integer (1.0 as 1)",
    ),
    (
        "ids-big-int-rounded",
        Mutant::IdsBigIntRounded,
        "canonical JSON (ids, input_hash, the canonical op) rounds an integer above 2^53 through a double",
    ),
    (
        "ids-escaped-non-ascii",
        Mutant::IdsEscapedNonAscii,
        "canonical JSON (ids, input_hash, the canonical op) escapes non-ASCII characters as \\uXXXX (ensure_ascii) instead of writing them raw",
    ),
];

/// The mutant named `name` (as `--mutant` takes it).
pub(crate) fn parse(name: &str) -> Option<Mutant> {
    ALL.iter().find(|(n, _, _)| *n == name).map(|(_, m, _)| *m)
}

/// The name of `m`.
pub(crate) fn name(m: Mutant) -> &'static str {
    ALL.iter().find(|(_, x, _)| *x == m).map(|(n, _, _)| *n).unwrap_or("?")
}

/// The real adapter with one mutant applied.
pub(crate) struct MutantAdapter {
    inner: Adapter,
    m: Mutant,
    /// Checkpoints not written yet (volatile-checkpoints).
    pending: Vec<execution::Pending>,
}

impl MutantAdapter {
    fn new(m: Mutant, mut cfg: Config) -> Self {
        identity::configure(m, &mut cfg);
        budget::configure(m, &mut cfg);
        supervision::configure(m, &mut cfg);
        MutantAdapter { inner: Adapter::new(cfg), m, pending: Vec::new() }
    }

    fn is(&self, m: Mutant) -> bool {
        self.m == m
    }

    /// The request's arguments as this mutant rewrites them (`None`: as
    /// they are).
    fn rewrite(&mut self, op: Op, a: &Value) -> R<Option<Value>> {
        let mut a = a.clone();
        let changed = identity::rewrite(self, &mut a)
            | lease::rewrite(self, op, &mut a)?
            | execution::rewrite(self, op, &mut a)
            | approvals::rewrite(self, op, &mut a);
        Ok(changed.then_some(a))
    }

    /// This mutant's version of `op` (`None`: the real adapter's).
    fn replace(&mut self, op: Op, a: &Value) -> Option<R> {
        canonical_ids::handle(self, op, a)
            .or_else(|| identity::handle(self, op, a))
            .or_else(|| lease::handle(self, op, a))
            .or_else(|| execution::handle(self, op, a))
            .or_else(|| budget::handle(self, op, a))
            .or_else(|| supervision::handle(self, op, a))
            .or_else(|| transport::handle(self, op, a))
            .or_else(|| approvals::handle(self, op, a))
            .or_else(|| contention::handle(self, op, a))
            .or_else(|| times::handle(self, op, a))
    }
}

impl Handler for MutantAdapter {
    fn handle(&mut self, req: Request) -> R {
        let op = req.op();
        if op != Op::Checkpoint {
            self.flush();
        }
        // a mutant forges and rewrites args as JSON; the real adapter reads them typed again
        let a = &req.args();
        let rewritten = self.rewrite(op, a)?;
        let a = rewritten.as_ref().unwrap_or(a);
        let mut out = match self.replace(op, a) {
            Some(res) => res?,
            None => self.inner.handle_args(op, a)?,
        };
        if op == Op::Hello {
            out["implementation"] = json!(format!("dhp-rs (mutant {})", name(self.m)));
        }
        Ok(out)
    }

    fn finish(&mut self) {
        self.flush();
    }

    fn clock_offset(&mut self, offset: Option<f64>) {
        if !self.is(Mutant::ClockOffsetIgnored) {
            self.inner.clock_offset(offset);
        }
    }

    fn clock_idle(&mut self) {
        Handler::clock_idle(&mut self.inner);
    }
}

fn usage() -> ! {
    eprintln!("usage: dhp-mutant-adapter --mutant NAME [dhp-adapter options] | --list-mutants");
    std::process::exit(2);
}

/// Run the adapter with the mutant `--mutant NAME` over stdin/stdout
/// (`args` without the program name; the other options are
/// `dhp-adapter`'s). `--list-mutants` lists them. Returns the exit status.
pub fn run(args: impl IntoIterator<Item = String>) -> i32 {
    let mut mutant = None;
    let mut rest = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--mutant" => mutant = Some(parse(&args.next().unwrap_or_default()).unwrap_or_else(|| usage())),
            "-h" | "--help" => {
                println!(
                    "dhp-mutant-adapter: dhp-adapter with one guarantee removed, to prove the conformance\n\
assertions can fail (not an example adapter: that is dhp-adapter).\n\n\
usage: dhp-mutant-adapter --mutant NAME [dhp-adapter options] | --list-mutants"
                );
                return 0;
            }
            "--list-mutants" => {
                for (name, _, what) in ALL {
                    println!("{name}\t{what}");
                }
                return 0;
            }
            _ => rest.push(arg),
        }
    }
    let Some(m) = mutant else { usage() };
    eprintln!("dhp-mutant-adapter: mutant {} active", name(m));
    adapter::serve("dhp-mutant-adapter", rest, |cfg| Box::new(MutantAdapter::new(m, cfg)))
}
