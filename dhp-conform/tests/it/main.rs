//! dhp-conform's integration tests: one test binary (building and linking one
//! binary per scenario cost minutes), one scenario per module file.
//! Helpers shared by the scenarios are the `*_support`/`common` modules.

mod common;
mod pg_common;

mod adapter_cannot_start;
mod adapter_chatter;
mod adapter_far_future_at;
mod adapter_grandchild;
mod adapter_helper_double_fork;
mod adapter_helper_env_cleared;
mod adapter_helper_setsid;
mod adapter_requests;
mod adapter_skeleton;
mod bad_adapters;
mod cli_filters;
mod cli_surface;
mod conformance;
mod docs_counts;
mod expectations;
mod explore;
mod fuzz_adapter_replay;
mod huge_reply_line;
mod huge_stderr_line;
mod hung_adapter;
mod impl_defined;
mod mutants;
mod mutants_not_shipped;
mod mutation_accounting;
mod pg_compare_engines;
mod pg_cross_engines;
mod pg_keep;
mod pg_mutants;
mod pg_reference_unsupported;
mod pg_store_secrets;
mod pg_suite;
mod protocol_clock;
mod protocol_doc_index;
mod protocol_suite;
mod report_outputs;
mod report_publish;
mod run_refusals;
mod unknown_impl;
