//! Fuzz target: see `kmerflow_core::fuzzing::fastx_records`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kmerflow_core::fuzzing::fastx_records(data));
