//! Fuzz target: see `kmerflow_core::fuzzing::khmer_table`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kmerflow_core::fuzzing::khmer_table(data));
