//! dhp-adapter-proto's tests: the types against the schemas in
//! spec/adapter/, both ways.

mod samples;
mod schema;
