#![no_main]
//! See dhp_testkit::fuzzing::env_config and docs/fuzzing.md.
libfuzzer_sys::fuzz_target!(|data: &[u8]| dhp_testkit::fuzzing::env_config(data));
