//! Beyond the reference's ten: leases, release, idempotency, races,
//! tamper and crash tolerance of the portable formats, limits, stalls,
//! budget enforcement by the supervisor, effects, capabilities,
//! canonical-JSON vectors, and fast death detection.

mod helpers;

mod lease_expiry_lease_lost;
pub use lease_expiry_lease_lost::lease_expiry_lease_lost;

mod heartbeat_extends_lease;
pub use heartbeat_extends_lease::heartbeat_extends_lease;

mod release_to_pending;
pub use release_to_pending::release_to_pending;

mod idempotent_complete;
pub use idempotent_complete::idempotent_complete;

mod ack_after_complete;
pub use ack_after_complete::ack_after_complete;

mod claim_race;
pub use claim_race::claim_race;

mod tampered_bundle_rejected;
pub use tampered_bundle_rejected::tampered_bundle_rejected;

mod tampered_log_rejected;
pub use tampered_log_rejected::tampered_log_rejected;

mod tampered_checkpoint_rejected;
pub use tampered_checkpoint_rejected::tampered_checkpoint_rejected;

mod truncated_log_line_tolerated;
pub use truncated_log_line_tolerated::truncated_log_line_tolerated;

mod newer_schema_refused;
pub use newer_schema_refused::newer_schema_refused;

mod oversize_rejected;
pub use oversize_rejected::oversize_rejected;

mod malformed_ids_rejected;
pub use malformed_ids_rejected::malformed_ids_rejected;

mod stall_orphan_then_dlq;
pub use stall_orphan_then_dlq::stall_orphan_then_dlq;

mod supervisor_budget_kill;
pub use supervisor_budget_kill::supervisor_budget_kill;

mod effects_first_write_wins;
pub use effects_first_write_wins::effects_first_write_wins;

mod capabilities_fail_closed;
pub use capabilities_fail_closed::capabilities_fail_closed;

mod canonical_vectors;
pub use canonical_vectors::canonical_vectors;

mod fast_death_detection;
pub use fast_death_detection::{fast_death_detection, FAST_DEATH_LIMIT};
