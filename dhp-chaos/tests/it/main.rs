//! dhp-chaos's integration tests: one test binary (building and linking one
//! binary per scenario cost minutes), one scenario per module file.
//! Helpers shared by the scenarios are the `*_support`/`common` modules.

mod common;

mod checker_audit;
mod checker_indeterminate;
mod checker_rules;
mod ci_rounds;
mod clock_leader_probe;
mod clock_libfaketime;
mod clock_round;
mod db_faults_refused;
mod db_faults_round;
mod db_link_refused;
mod db_mutant_ack_uncommitted;
mod db_mutant_unheld_liveness;
mod db_mutant_wedge;
mod db_wedge_builtin_holds;
mod disk_full_round;
mod failpoint_deaths;
mod failpoints_probe;
mod flags_validated;
mod hosts_death;
mod hosts_link_round;
mod hosts_refusals;
mod hosts_round;
mod interrupted;
mod mutant_ack_on_full;
mod mutant_ack_unshipped;
mod mutant_async_lag;
mod mutant_peer_acks;
mod mutant_ship_altered;
mod mutant_ship_late;
mod mutants;
mod mutants_history_off;
mod netchaos_builtin;
mod netchaos_mutant;
mod netchaos_python;
mod netchaos_python_peer;
mod netchaos_refusals;
mod nightly_run_dir;
mod out_not_empty;
mod pg_child_argv;
mod pg_link_round;
mod pg_round;
mod pg_run_secret_and_schema;
mod pinned;
mod reaper;
mod rounds_zero;
mod site_dashboard;
mod site_index;
mod site_support;
mod start_deaths;
mod store_disk_refused;
mod store_full_round;
mod timeline_kill_while_stopped;
