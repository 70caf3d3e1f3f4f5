#![no_main]
//! See dhp_conform::fuzzing::adapter and docs/fuzzing.md.
libfuzzer_sys::fuzz_target!(|data: &[u8]| dhp_conform::fuzzing::adapter(data));
