//! The data pump: compressed input, chunked reading, the FASTA/FASTQ parser, pairing and
//! atomic output files.
//!
//! Reading path: [`compress::open_input`] sniffs the compression from magic bytes and gives a
//! decompressed byte stream; [`pump`] reads it in large chunks on its own thread;
//! [`fastx::FastxReader`] cuts chunks at record boundaries into [`fastx::RecordBatch`]es whose
//! records are borrowed slices of the chunk; [`pairs::PairedReader`] groups records into
//! khmer's "bundles" (pairs or single reads).
//!
//! Writing path: [`output::OutputFile`] writes to a temporary name and renames on success,
//! compressing by the output name's extension; [`output::write_record`] formats records
//! exactly as khmer does.

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
