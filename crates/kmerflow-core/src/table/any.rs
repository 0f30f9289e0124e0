//! A table of either layout, chosen at run time (`--layout`), so that commands work on both.

use super::{native_format, BlockedTable, CountingTable, HashKind, KhmerTable, Layout};
use crate::kmer::Strand;
use crate::run::RunContext;
use crate::{Error, Result};
use std::io::Read;

/// A table of either layout.
pub enum AnyTable {
    /// khmer's layout.
    Khmer(KhmerTable),
    /// The blocked layout.
    Blocked(BlockedTable),
}

/// Calls `$body` with `$t` bound to the table inside an [`AnyTable`].
macro_rules! dispatch {
    ($table:expr, $t:ident => $body:expr) => {
        match $table {
            AnyTable::Khmer($t) => $body,
            AnyTable::Blocked($t) => $body,
        }
    };
}

impl AnyTable {
    /// The layout of this table.
    pub fn layout(&self) -> Layout {
        match self {
            AnyTable::Khmer(_) => Layout::Khmer,
            AnyTable::Blocked(_) => Layout::Blocked,
        }
    }

    /// Bytes of counter memory.
    pub fn memory_bytes(&self) -> u64 {
        match self {
            AnyTable::Khmer(t) => t.memory_bytes(),
            AnyTable::Blocked(t) => t.params().data_bytes(),
        }
    }

    /// Which strand its k-mers are hashed on.
    pub fn strand(&self) -> Strand {
        match self {
            AnyTable::Khmer(t) => t.strand(),
            AnyTable::Blocked(t) => t.params().strand,
        }
    }

    /// Counters a k-mer has: the number of tables of khmer's layout, of probes of the blocked one.
    pub fn counters_per_kmer(&self) -> usize {
        match self {
            AnyTable::Khmer(t) => t.n_tables(),
            AnyTable::Blocked(t) => t.params().probes,
        }
    }

    /// Loads a table file of either format, told apart by its first bytes; a khmer file is
    /// read with `khmer_hash` (khmer files do not record their hash family). A stream (a pipe,
    /// a FIFO) cannot be looked at and opened again, and kmerflow's tables are memory-mapped
    /// from regular files, so a stream is read as a khmer table.
    pub fn load(path: &str, khmer_hash: HashKind) -> Result<Self> {
        Self::load_in(path, khmer_hash, &RunContext::new())
    }

    /// [`AnyTable::load`] within the run `ctx`: a table read from a FIFO or other stream stops
    /// waiting for it once the run is cancelled.
    pub fn load_in(path: &str, khmer_hash: HashKind, ctx: &RunContext) -> Result<Self> {
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            return Ok(AnyTable::Khmer(KhmerTable::load_in(path, khmer_hash, ctx)?));
        }
        let mut start = [0u8; 8];
        let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let n = file.read(&mut start).map_err(|e| Error::io(path, e))?;
        if native_format::is_native(&start[..n]) {
            Ok(AnyTable::Blocked(BlockedTable::load(path)?))
        } else {
            Ok(AnyTable::Khmer(KhmerTable::load_in(path, khmer_hash, ctx)?))
        }
    }
}

/// The primitives by dispatch; the shared operations are the trait's defaults.
impl CountingTable for AnyTable {
    fn ksize(&self) -> usize {
        dispatch!(self, t => t.ksize())
    }
    fn holds_counts(&self) -> bool {
        dispatch!(self, t => t.holds_counts())
    }
    fn kmer_hashes(&self, seq: &[u8], out: &mut Vec<u64>) {
        dispatch!(self, t => t.kmer_hashes(seq, out))
    }
    fn add_hash(&self, hash: u64) -> bool {
        dispatch!(self, t => t.add_hash(hash))
    }
    fn get_hash(&self, hash: u64) -> u32 {
        dispatch!(self, t => t.get_hash(hash))
    }
    fn add_hashes(&self, hashes: &[u64]) {
        dispatch!(self, t => t.add_hashes(hashes))
    }
    fn add_hashes_exclusive(&mut self, hashes: &[u64]) {
        dispatch!(self, t => t.add_hashes_exclusive(hashes))
    }
    fn counts_for_hashes(&self, hashes: &[u64], out: &mut Vec<u32>) {
        dispatch!(self, t => t.counts_for_hashes(hashes, out))
    }
    fn consume_many<'a>(&self, seqs: impl IntoIterator<Item = &'a [u8]>) -> u64 {
        dispatch!(self, t => t.consume_many(seqs))
    }
    fn consume_many_exclusive<'a>(&mut self, seqs: impl IntoIterator<Item = &'a [u8]>) -> u64 {
        dispatch!(self, t => t.consume_many_exclusive(seqs))
    }
    fn median_at_least_hashes(&self, hashes: &[u64], cutoff: u32) -> bool {
        dispatch!(self, t => t.median_at_least_hashes(hashes, cutoff))
    }
    fn n_occupied(&self) -> u64 {
        dispatch!(self, t => t.n_occupied())
    }
    fn n_unique_kmers(&self) -> u64 {
        dispatch!(self, t => t.n_unique_kmers())
    }
    fn save_in(&self, path: &str, ctx: &RunContext) -> Result<()> {
        dispatch!(self, t => t.save_in(path, ctx))
    }
}
