//! One interface over both table layouts, so that commands can switch with `--layout`.
//!
//! [`CountingTable`] is the set of operations the counting and filtering commands use;
//! [`super::super::KTable`] and [`BlockedTable`] implement it with their own methods, and
//! [`AnyTable`] holds either one (chosen at run time) and implements it by dispatch.
//! Hashes are layout specific: pass only hashes from the same table's `kmer_hashes`.

use super::{BlockedTable, CounterWidth};
use crate::table::{native_format, HashKind, KTable};
use crate::{Error, Result};
use std::io::Read;

/// The table layout of a command (`--layout khmer|blocked`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// khmer's prime-sized tables, file-compatible with khmer (the default).
    #[default]
    Khmer,
    /// All counters of a k-mer in one cache line, kmerflow's own file format.
    Blocked,
}

impl std::str::FromStr for Layout {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "khmer" => Ok(Self::Khmer),
            "blocked" => Ok(Self::Blocked),
            _ => Err(Error::invalid(format!("unknown table layout '{s}' (expected khmer or blocked)"))),
        }
    }
}

/// The operations of a k-mer counting table that the commands use.
pub trait CountingTable: Sync {
    /// k.
    fn ksize(&self) -> usize;
    /// Appends the hash of every k-mer of `seq` (cleaned by the caller) to `out`.
    fn kmer_hashes(&self, seq: &[u8], out: &mut Vec<u64>);
    /// Adds one hashed k-mer; true when it was new. Thread-safe.
    fn add_hash(&self, hash: u64) -> bool;
    /// Count of one hashed k-mer.
    fn get_hash(&self, hash: u64) -> u32;
    /// Adds each hash once, in order, prefetching. Thread-safe.
    fn add_hashes(&self, hashes: &[u64]);
    /// Appends the count of each hash to `out`.
    fn counts_for_hashes(&self, hashes: &[u64], out: &mut Vec<u32>);
    /// Counts every k-mer of `seq`; returns their number. Thread-safe.
    fn consume(&self, seq: &[u8]) -> u64;
    /// Counts every k-mer of every sequence with one prefetch pipeline. Thread-safe.
    fn consume_many<'a>(&self, seqs: impl IntoIterator<Item = &'a [u8]>) -> u64;
    /// Appends the count of every k-mer of `seq` to `out`.
    fn kmer_counts(&self, seq: &[u8], out: &mut Vec<u32>);
    /// (upper median, mean, stddev) of the k-mer counts of `seq`.
    fn median_count(&self, seq: &[u8]) -> Option<(u32, f32, f32)>;
    /// Whether the upper median of the counts of `seq` is >= `cutoff`.
    fn median_at_least(&self, seq: &[u8], cutoff: u32) -> bool;
    /// [`CountingTable::median_at_least`] of hashed k-mers.
    fn median_at_least_hashes(&self, hashes: &[u64], cutoff: u32) -> bool;
    /// Longest prefix whose k-mers all have count >= `cutoff`.
    fn trim_on_abundance(&self, seq: &[u8], cutoff: u32) -> usize;
    /// Longest prefix whose k-mers all have count <= `cutoff`.
    fn trim_below_abundance(&self, seq: &[u8], cutoff: u32) -> usize;
    /// Occupied bins of table 0 (khmer) / non-zero counters (blocked).
    fn n_occupied(&self) -> u64;
    /// Adds that found a zero counter.
    fn n_unique_kmers(&self) -> u64;
    /// Saves in the layout's own file format.
    fn save(&self, path: &str) -> Result<()>;
}

/// Implements [`CountingTable`] for a type with inherent methods of the same names.
macro_rules! delegate_to_inherent {
    ($T:ty) => {
        impl CountingTable for $T {
            fn ksize(&self) -> usize {
                <$T>::ksize(self)
            }
            fn kmer_hashes(&self, seq: &[u8], out: &mut Vec<u64>) {
                <$T>::kmer_hashes(self, seq, out)
            }
            fn add_hash(&self, hash: u64) -> bool {
                <$T>::add_hash(self, hash)
            }
            fn get_hash(&self, hash: u64) -> u32 {
                <$T>::get_hash(self, hash)
            }
            fn add_hashes(&self, hashes: &[u64]) {
                <$T>::add_hashes(self, hashes)
            }
            fn counts_for_hashes(&self, hashes: &[u64], out: &mut Vec<u32>) {
                <$T>::counts_for_hashes(self, hashes, out)
            }
            fn consume(&self, seq: &[u8]) -> u64 {
                <$T>::consume(self, seq)
            }
            fn consume_many<'a>(&self, seqs: impl IntoIterator<Item = &'a [u8]>) -> u64 {
                <$T>::consume_many(self, seqs)
            }
            fn kmer_counts(&self, seq: &[u8], out: &mut Vec<u32>) {
                <$T>::kmer_counts(self, seq, out)
            }
            fn median_count(&self, seq: &[u8]) -> Option<(u32, f32, f32)> {
                <$T>::median_count(self, seq)
            }
            fn median_at_least(&self, seq: &[u8], cutoff: u32) -> bool {
                <$T>::median_at_least(self, seq, cutoff)
            }
            fn median_at_least_hashes(&self, hashes: &[u64], cutoff: u32) -> bool {
                <$T>::median_at_least_hashes(self, hashes, cutoff)
            }
            fn trim_on_abundance(&self, seq: &[u8], cutoff: u32) -> usize {
                <$T>::trim_on_abundance(self, seq, cutoff)
            }
            fn trim_below_abundance(&self, seq: &[u8], cutoff: u32) -> usize {
                <$T>::trim_below_abundance(self, seq, cutoff)
            }
            fn n_occupied(&self) -> u64 {
                <$T>::n_occupied(self)
            }
            fn n_unique_kmers(&self) -> u64 {
                <$T>::n_unique_kmers(self)
            }
            fn save(&self, path: &str) -> Result<()> {
                <$T>::save(self, path)
            }
        }
    };
}

delegate_to_inherent!(KTable);
delegate_to_inherent!(BlockedTable);

/// A table of either layout.
pub enum AnyTable {
    /// khmer's layout.
    Khmer(KTable),
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

    /// True for counters, false for presence bits (1-bit counters, a nodegraph).
    pub fn holds_counts(&self) -> bool {
        match self {
            AnyTable::Khmer(t) => t.holds_counts(),
            AnyTable::Blocked(t) => t.params().width != CounterWidth::Bits1,
        }
    }

    /// Loads a table file of either format, told apart by its first bytes; a khmer file is
    /// read with `khmer_hash` (khmer files do not record their hash family).
    pub fn load(path: &str, khmer_hash: HashKind) -> Result<Self> {
        let mut start = [0u8; 8];
        let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let n = file.read(&mut start).map_err(|e| Error::io(path, e))?;
        if native_format::is_native(&start[..n]) {
            Ok(AnyTable::Blocked(BlockedTable::load(path)?))
        } else {
            Ok(AnyTable::Khmer(KTable::load(path, khmer_hash)?))
        }
    }
}

impl CountingTable for AnyTable {
    fn ksize(&self) -> usize {
        dispatch!(self, t => t.ksize())
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
    fn counts_for_hashes(&self, hashes: &[u64], out: &mut Vec<u32>) {
        dispatch!(self, t => t.counts_for_hashes(hashes, out))
    }
    fn consume(&self, seq: &[u8]) -> u64 {
        dispatch!(self, t => t.consume(seq))
    }
    fn consume_many<'a>(&self, seqs: impl IntoIterator<Item = &'a [u8]>) -> u64 {
        dispatch!(self, t => t.consume_many(seqs))
    }
    fn kmer_counts(&self, seq: &[u8], out: &mut Vec<u32>) {
        dispatch!(self, t => t.kmer_counts(seq, out))
    }
    fn median_count(&self, seq: &[u8]) -> Option<(u32, f32, f32)> {
        dispatch!(self, t => t.median_count(seq))
    }
    fn median_at_least(&self, seq: &[u8], cutoff: u32) -> bool {
        dispatch!(self, t => t.median_at_least(seq, cutoff))
    }
    fn median_at_least_hashes(&self, hashes: &[u64], cutoff: u32) -> bool {
        dispatch!(self, t => t.median_at_least_hashes(hashes, cutoff))
    }
    fn trim_on_abundance(&self, seq: &[u8], cutoff: u32) -> usize {
        dispatch!(self, t => t.trim_on_abundance(seq, cutoff))
    }
    fn trim_below_abundance(&self, seq: &[u8], cutoff: u32) -> usize {
        dispatch!(self, t => t.trim_below_abundance(seq, cutoff))
    }
    fn n_occupied(&self) -> u64 {
        dispatch!(self, t => t.n_occupied())
    }
    fn n_unique_kmers(&self) -> u64 {
        dispatch!(self, t => t.n_unique_kmers())
    }
    fn save(&self, path: &str) -> Result<()> {
        dispatch!(self, t => t.save(path))
    }
}
