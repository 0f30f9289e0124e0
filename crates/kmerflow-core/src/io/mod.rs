//! The data pump: compressed input, chunked reading, the FASTA/FASTQ parser, pairing and
//! atomic output files.
//!
//! Reading path: [`compress::open_input`] sniffs the compression from magic bytes and gives a
//! decompressed byte stream; [`pump`] reads it in large chunks on its own thread;
//! [`fastx::FastxReader`] cuts chunks at record boundaries into [`fastx::RecordBatch`]es whose
//! records are borrowed slices of the chunk; [`pairs::PairedReader`] groups records into
//! khmer's "bundles" (pairs or single reads).
//!
//! gzip inputs in BGZF form are decompressed in parallel ([`bgzf`]); `.gz` outputs are
//! compressed in parallel (BGZF) when the run has more than one thread
//! ([`crate::run::RunContext::set_threads`]). Readers and outputs opened within a run count
//! their bytes in its metrics and progress, and readers stop waiting for input once the run is
//! cancelled.
//!
//! Writing path: [`output::OutputFile`] writes to a temporary name and renames on success,
//! compressing by the output name's extension; [`output::write_record`] formats records
//! exactly as khmer does.

pub mod bgzf;
pub mod compress;
pub mod fastx;
pub mod output;
pub mod pairs;
mod parse;
pub mod pump;

pub use compress::Compression;
pub use fastx::{FastxReader, Format, OwnedRecord, Record, RecordBatch};
pub use output::{write_record, OutputFile};
pub use pairs::{Bundle, BundleBatch, PairMode, PairedReader};

use crate::pipeline::Workload;

impl Workload for RecordBatch {
    fn records(&self) -> u64 {
        self.len() as u64
    }
    fn bytes(&self) -> u64 {
        self.iter().map(|r| r.seq.len() as u64).sum()
    }
}

impl Workload for BundleBatch {
    fn records(&self) -> u64 {
        self.batch.records()
    }
    fn bytes(&self) -> u64 {
        self.batch.bytes()
    }
}
