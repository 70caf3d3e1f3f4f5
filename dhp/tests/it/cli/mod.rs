//! The `dhp` program's cli scenarios.

mod bad_input;
mod budget_counter_overflow;
mod census_budget;
mod closed_pipe;
mod error_format;
mod fuzz_env_huge_seconds;
mod help_and_status;
mod infinite_lease;
mod lease_lost_at_commit;
mod reserved_ids;
mod status_list_quarantine;
mod store_creation;
mod supervisor_exit;
mod suspend_atomic;
mod worker_text_order;
mod workload_service;
