//! Fuzz target: see `kmerflow_core::fuzzing::pairing`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kmerflow_core::fuzzing::pairing(data));
