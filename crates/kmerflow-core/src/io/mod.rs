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
//! compressed in parallel (BGZF) when more than one io thread is set ([`set_threads`]).
//!
//! Writing path: [`output::OutputFile`] writes a regular file under a temporary name and renames
//! it on success (special files in place), compressing by the output name's extension;
//! [`output::write_record`] formats records exactly as khmer does; [`same_file`] refuses an
//! output that is one of the inputs.

pub mod bgzf;
pub mod compress;
pub mod fastx;
mod gzip;
pub mod limits;
pub mod output;
pub mod pairs;
mod parse;
pub mod pump;
pub mod same_file;

pub use compress::Compression;
pub use fastx::{FastxReader, Format, OwnedRecord, Record, RecordBatch};
pub use output::{write_record, OutputFile, Staged};
pub use pairs::{Bundle, BundleBatch, PairMode, PairedReader};
pub use same_file::{refuse_inputs_as_outputs, same_file};

use crate::{Error, Result};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Refuses an input that cannot be read twice: stdin (`-`), a FIFO, a device. Commands that read
/// their input twice (count, then process) call this before reading anything, instead of
/// waiting forever on a second opening of a pipe that has been drained.
pub fn check_rereadable(path: &str) -> Result<()> {
    let regular = path != "-" && std::fs::metadata(path).is_ok_and(|m| m.is_file());
    if regular || (path != "-" && !std::path::Path::new(path).exists()) {
        // A missing file is reported by the opening itself.
        return Ok(());
    }
    Err(Error::format(
        path,
        None,
        None,
        "needs a regular file: it is read twice (counted, then processed); save the stream to a file first",
    ))
}

/// Threads for parallel (de)compression; see [`set_threads`].
static THREADS: AtomicUsize = AtomicUsize::new(1);

/// Sets the number of threads used to decompress BGZF inputs and to compress `.gz` outputs
/// (process-wide; the command line sets it from `-T`). With 1, `.gz` outputs are a single
/// streaming gzip member.
pub fn set_threads(threads: usize) {
    THREADS.store(threads.max(1), Ordering::Relaxed);
}

/// The number set by [`set_threads`] (1 by default).
pub fn threads() -> usize {
    THREADS.load(Ordering::Relaxed)
}
