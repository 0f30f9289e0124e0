//! khmer's read-pair recognition and its "broken paired" reading semantics (KHMER.md §4.0).

use super::fastx::{FastxReader, Record, RecordBatch};
use crate::Result;

/// True when `name` is recognised as read 1 of a pair (`/1`, Casava 1.8 ` 1:`, SRA style).
pub fn check_is_left(name: &[u8]) -> bool {
    let _ = name;
    todo!()
}

/// True when `name` is recognised as read 2 of a pair.
pub fn check_is_right(name: &[u8]) -> bool {
    let _ = name;
    todo!()
}

/// khmer's `check_is_pair`: true when `r1` and `r2` are mates. Mixing a FASTA and a FASTQ record
/// is an error.
pub fn check_is_pair(r1: &Record<'_>, r2: &Record<'_>) -> Result<bool> {
    let _ = (r1, r2);
    todo!()
}

/// How consecutive records are grouped into bundles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairMode {
    /// Mates recognised by name form pairs, everything else is a single read (khmer default).
    BrokenPaired,
    /// Every record is a single read (`--force_single`).
    ForceSingle,
    /// Every record must be part of a pair; an orphan is an error (`-p`).
    RequirePaired,
}

/// One unit of work: a single read or a pair, as indices into the batch's records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bundle {
    /// Index of the (first) read.
    pub first: usize,
    /// Index of the mate, for pairs.
    pub second: Option<usize>,
}

/// A batch of records grouped into bundles; bundles never straddle batches.
#[derive(Debug)]
pub struct BundleBatch {
    /// The records.
    pub batch: RecordBatch,
    /// Bundles in input order. Records dropped for being shorter than `min_length` belong to no
    /// bundle.
    pub bundles: Vec<Bundle>,
    /// Records dropped in this batch for being shorter than `min_length`.
    pub n_short_dropped: u64,
}

/// Groups records of one interleaved file, or of two files (R1 + R2), into bundles.
pub struct PairedReader {
    _private: (),
}

impl PairedReader {
    /// khmer's `broken_paired_reader` over one file, with reads shorter than `min_length`
    /// dropped exactly as khmer drops them.
    pub fn new(reader: FastxReader, mode: PairMode, min_length: Option<usize>) -> Self {
        let _ = (reader, mode, min_length);
        todo!()
    }

    /// Pairs record i of `r1` with record i of `r2`; unequal record counts are an error.
    pub fn from_two_files(r1: FastxReader, r2: FastxReader, min_length: Option<usize>) -> Self {
        let _ = (r1, r2, min_length);
        todo!()
    }

    /// The next batch of bundles, `None` at the end.
    pub fn next_batch(&mut self) -> Result<Option<BundleBatch>> {
        todo!()
    }
}
