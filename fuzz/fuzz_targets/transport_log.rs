#![no_main]
//! See dhp_testkit::fuzzing::transport_log and docs/fuzzing.md.
libfuzzer_sys::fuzz_target!(|data: &[u8]| dhp_testkit::fuzzing::transport_log(data));
