//! The data pump: compressed input, chunked reading, the FASTA/FASTQ parser, pairing and
//! atomic output files.
//!
//! Reading path: [`compress::open_input`] sniffs the compression from magic bytes and gives a
//! decompressed byte stream; [`pump`] reads it in large chunks on its own thread;
//! [`fastx::FastxReader`] cuts chunks at record boundaries into [`fastx::RecordBatch`]es whose
//! records are borrowed slices of the chunk; [`pairs::PairedReader`] groups records into
//! khmer's "bundles" (pairs or single reads); [`mates`] reads R1/R2 files as pairs and writes
//! kept pairs to R1/R2 files.
//!
//! gzip inputs in BGZF form are decompressed in parallel ([`bgzf`]); `.gz` outputs are
//! compressed in parallel (BGZF) when the run has more than one thread
//! ([`crate::run::RunContext::set_threads`]). Readers and outputs opened within a run count
//! their bytes in its metrics and progress, and readers stop waiting for input (or for a FIFO to
//! be opened, see [`interruptible`]) once the run is cancelled.
//!
//! Writing path: [`output::OutputFile`] writes a regular file under a temporary name and renames
//! it on success (special files in place), compressing by the output name's extension;
//! [`output::write_record`] formats records exactly as khmer does; [`same_file`] tells whether two
//! paths name one file, for the run's preflight ([`crate::run::files::preflight`]).

pub mod bgzf;
pub mod compress;
pub mod discard;
pub mod fastx;
mod gzip;
pub mod interruptible;
pub mod limits;
pub mod mates;
pub mod output;
pub mod pairs;
mod parse;
pub mod pump;
pub mod same_file;

pub use compress::Compression;
pub use fastx::{FastxReader, Format, OwnedRecord, Record, RecordBatch};
pub use mates::{MateBuffers, MateCounts, MateFiles, MateWriter, PairedInput, PairedOutput};
pub use output::{write_record, OutputFile, Staged};
pub use pairs::{Bundle, BundleBatch, PairMode, PairedReader};
pub use same_file::{refuse_inputs_as_outputs, same_file};

use crate::pipeline::Workload;
use crate::{Error, Result};

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

/// A FIFO made at `dir/name`, for the tests of code that meets one; returns its path.
#[cfg(test)]
pub(crate) fn test_fifo(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo only reads the path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    path
}

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
