//! dhp-workload's tests.

mod history_schema;
