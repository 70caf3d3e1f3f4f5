#![no_main]
//! See dhp_core::fuzzing::env_config and docs/fuzzing.md.
libfuzzer_sys::fuzz_target!(|data: &[u8]| dhp_core::fuzzing::env_config(data));
